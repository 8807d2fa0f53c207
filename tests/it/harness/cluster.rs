//! A Redis Cluster on loopback: three primaries and three replicas, each with the module
//! loaded, made by `redis-cli --cluster create`.

use super::query::run;
use std::process::Command;
use std::time::{Duration, Instant};

use super::{info_field, Flavor, Options, Server};

pub struct Cluster {
    pub nodes: Vec<Server>,
}

impl Cluster {
    pub fn start(flavor: Flavor) -> Cluster {
        let nodes: Vec<Server> = (0..6)
            .map(|_| {
                Server::start_with(
                    flavor,
                    Options {
                        cluster: true,
                        ..Options::default()
                    },
                )
            })
            .collect();
        let addresses: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let output = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addresses)
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .output()
            .expect("redis-cli runs");
        assert!(
            output.status.success(),
            "cluster create failed: {}",
            String::from_utf8_lossy(&output.stdout)
        );
        let cluster = Cluster { nodes };
        cluster.wait_until_settled();
        cluster
    }

    /// Waits until every node sees all slots served and every replica is in sync.
    pub fn wait_until_settled(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        for node in &self.nodes {
            let mut con = node.connection();
            loop {
                let info: String = run(&mut con, ("CLUSTER", "INFO"));
                let ok =
                    info.contains("cluster_state:ok") && info.contains("cluster_slots_ok:16384");
                let synced = info_field(&mut con, "replication", "role") == "master"
                    || info_field(&mut con, "replication", "master_link_status") == "up";
                if ok && synced {
                    break;
                }
                assert!(Instant::now() < deadline, "cluster did not settle: {info}");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }

    pub fn client(&self) -> redis::cluster::ClusterConnection {
        let nodes: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("redis://127.0.0.1:{}/", n.port))
            .collect();
        redis::cluster::ClusterClient::builder(nodes)
            .retries(10)
            .build()
            .and_then(|client| client.get_connection())
            .expect("cluster connection")
    }

    /// The node's cluster id.
    pub fn id(node: &Server) -> String {
        let mut con = node.connection();
        run(&mut con, ("CLUSTER", "MYID"))
    }

    /// The primary serving `key`'s slot, as the cluster currently says.
    pub fn primary_for(&self, key: &str) -> &Server {
        let mut con = self.nodes[0].connection();
        let slot: i64 = run(&mut con, ("CLUSTER", &["KEYSLOT", key]));
        self.nodes
            .iter()
            .find(|node| {
                let mut con = node.connection();
                let nodes: String = run(&mut con, ("CLUSTER", "NODES"));
                info_field(&mut con, "replication", "role") == "master" && serves(&nodes, slot)
            })
            .expect("a primary serves the slot")
    }

    /// The replica of `primary`.
    pub fn replica_of(&self, primary: &Server) -> &Server {
        let id = Cluster::id(primary);
        self.nodes
            .iter()
            .find(|node| {
                let mut con = node.connection();
                let nodes: String = run(&mut con, ("CLUSTER", "NODES"));
                nodes
                    .lines()
                    .find(|line| line.contains("myself"))
                    .is_some_and(|line| line.split(' ').nth(3) == Some(id.as_str()))
            })
            .expect("the primary has a replica")
    }
}

/// Whether the `myself` line of CLUSTER NODES lists `slot` among its ranges.
fn serves(nodes: &str, slot: i64) -> bool {
    let Some(line) = nodes.lines().find(|line| line.contains("myself")) else {
        return false;
    };
    line.split(' ').skip(8).any(|range| {
        let mut bounds = range.split('-').map(|b| b.parse::<i64>());
        match (bounds.next(), bounds.next()) {
            (Some(Ok(start)), Some(Ok(end))) => (start..=end).contains(&slot),
            (Some(Ok(only)), None) => only == slot,
            _ => false,
        }
    })
}
