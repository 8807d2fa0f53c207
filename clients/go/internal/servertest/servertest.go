// Package servertest starts the real servers the tests run against, on free loopback ports:
// REDIS_SERVER (Debian's redis-server by default) with the module REDIS_CELL_MODULE names (the
// debug build of this checkout by default), or with the Functions library from lua/dist, or
// with neither; a cluster of three primaries; and a server under libfaketime.
package servertest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// With is what a server has loaded.
type With int

const (
	Neither With = iota
	Module
	Library
)

func (w With) String() string {
	return [...]string{"neither", "module", "library"}[w]
}

// Server is one running server, stopped when its test ends.
type Server struct {
	Addr   string
	Port   int
	Dir    string
	Client *redis.Client
}

// Root is the checkout's root, where Cargo.toml is.
func Root(t testing.TB) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "Cargo.toml")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no Cargo.toml above the tests")
		}
		dir = parent
	}
}

// ModulePath is the module the servers load.
func ModulePath(t testing.TB) string {
	if path := os.Getenv("REDIS_CELL_MODULE"); path != "" {
		return path
	}
	return filepath.Join(Root(t), "target", "debug", "libredis_cell.so")
}

// LibrarySource is the Functions library, as FUNCTION LOAD takes it.
func LibrarySource(t testing.TB) string {
	source, err := os.ReadFile(filepath.Join(Root(t), "lua", "dist", "redis_cell.lua"))
	if err != nil {
		t.Fatal(err)
	}
	return string(source)
}

func binary() string {
	if path := os.Getenv("REDIS_SERVER"); path != "" {
		return path
	}
	return "/usr/bin/redis-server"
}

// Start starts a server with what it is given loaded, under clock if not nil, with config's
// directives added.
func Start(t testing.TB, with With, clock *Clock, config ...string) *Server {
	t.Helper()
	server, err := start(t, with, clock, config...)
	if err != nil {
		t.Fatal(err)
	}
	return server
}

func start(t testing.TB, with With, clock *Clock, config ...string) (*Server, error) {
	cluster := false
	for _, word := range config {
		cluster = cluster || word == "--cluster-enabled"
	}
	port := freePort(t, cluster)
	dir := t.TempDir()
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--dir", dir}
	args = append(args, config...)
	if with == Module {
		args = append(args, "--loadmodule", ModulePath(t))
	}
	var env []string
	if clock != nil {
		env = clock.environment()
	}
	log := filepath.Join(dir, "server.log")
	exited, err := launch(t, log, env, args...)
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	client := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	ctx := context.Background()
	gone := false
	up := Poll(200, func() bool {
		if client.Ping(ctx).Err() == nil {
			return true
		}
		select {
		case <-exited:
			gone = true
		default:
		}
		return gone
	})
	if gone {
		output, _ := os.ReadFile(log)
		return nil, fmt.Errorf("the server did not start: %s", output)
	}
	if !up {
		return nil, fmt.Errorf("the server did not answer on %s", addr)
	}
	if with == Library {
		if err := client.FunctionLoadReplace(ctx, LibrarySource(t)).Err(); err != nil {
			return nil, err
		}
	}
	return &Server{Addr: addr, Port: port, Dir: dir, Client: client}, nil
}

// launch starts the server's binary with args and env added to the environment, its output
// in the file log, killed when the test ends; exited is closed when it exits.
func launch(t testing.TB, log string, env []string, args ...string) (exited <-chan struct{}, err error) {
	cmd := exec.Command(binary(), args...)
	output, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = output, output
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	if err := cmd.Start(); err != nil {
		_ = output.Close()
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		_ = output.Close()
	})
	return done, nil
}

// Poll asks ok every 25 ms, at most tries times, and answers whether it held.
func Poll(tries int, ok func() bool) bool {
	for try := 0; try < tries; try++ {
		if ok() {
			return true
		}
		time.Sleep(25 * time.Millisecond)
	}
	return false
}

// freePort is a free loopback port; a cluster node's bus port, 10000 above it, is free too.
func freePort(t testing.TB, cluster bool) int {
	for tries := 0; tries < 100; tries++ {
		probe, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := probe.Addr().(*net.TCPAddr).Port
		_ = probe.Close()
		if !cluster {
			return port
		}
		if port <= 55535 {
			if bus, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000)); err == nil {
				_ = bus.Close()
				return port
			}
		}
	}
	t.Fatal("no free port whose cluster bus port is free too")
	return 0
}

// Cluster starts three primaries on loopback, each serving a third of the slots, and waits
// until each says the cluster is up.
func Cluster(t testing.TB, with With) []*Server {
	t.Helper()
	ctx := context.Background()
	var nodes []*Server
	for range 3 {
		nodes = append(nodes, Start(t, with, nil, "--cluster-enabled", "yes",
			"--cluster-node-timeout", "3000"))
	}
	for at, node := range nodes {
		first, last := at*16384/3, (at+1)*16384/3-1
		slots := make([]int, 0, last-first+1)
		for slot := first; slot <= last; slot++ {
			slots = append(slots, slot)
		}
		if err := node.Client.ClusterAddSlots(ctx, slots...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, other := range nodes[1:] {
		if err := nodes[0].Client.ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(other.Port)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, node := range nodes {
		var info string
		if !Poll(400, func() bool {
			info, _ = node.Client.ClusterInfo(ctx).Result()
			return strings.Contains(info, "cluster_state:ok")
		}) {
			t.Fatalf("the cluster did not form: %s", info)
		}
	}
	return nodes
}

// Addrs are the servers' addresses.
func Addrs(servers []*Server) []string {
	addrs := make([]string, len(servers))
	for at, s := range servers {
		addrs[at] = s.Addr
	}
	return addrs
}

// Do sends a command of the server's own to it, as an operator would.
func (s *Server) Do(t testing.TB, args ...any) any {
	t.Helper()
	reply, err := s.Client.Do(context.Background(), args...).Result()
	if err != nil && err != redis.Nil {
		t.Fatalf("%v: %v", args, err)
	}
	return reply
}

// String is fmt's, for messages.
func (s *Server) String() string {
	return fmt.Sprintf("server %s", s.Addr)
}

// Sentinel starts a sentinel watching primary as "primary", and answers its address.
func Sentinel(t testing.TB, primary *Server) string {
	t.Helper()
	port := freePort(t, false)
	dir := t.TempDir()
	config := filepath.Join(dir, "sentinel.conf")
	lines := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nsentinel monitor primary 127.0.0.1 %d 1\n", port, dir, primary.Port)
	if err := os.WriteFile(config, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "sentinel.log")
	if _, err := launch(t, log, nil, config, "--sentinel"); err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	sentinel := redis.NewSentinelClient(&redis.Options{Addr: addr})
	defer sentinel.Close()
	if !Poll(200, func() bool {
		got, err := sentinel.GetMasterAddrByName(context.Background(), "primary").Result()
		return err == nil && len(got) == 2
	}) {
		output, _ := os.ReadFile(log)
		t.Fatalf("the sentinel did not answer on %s: %s", addr, output)
	}
	return addr
}

// CommandStat is one count of INFO commandstats for command (lower case) since the server's
// stats were reset: "calls", or "rejected_calls" (a redirect among them), 0 where absent.
func (s *Server) CommandStat(t testing.TB, command, stat string) int64 {
	t.Helper()
	value, ok := s.infoLine(t, "commandstats", "cmdstat_"+command)[stat]
	if !ok {
		return 0
	}
	return count(t, stat, value)
}

// Waiting is the module's count of BLOCK calls (INFO redis-cell, its cl_waiting line): now,
// waited, admitted, timed_out and left, by name.
func (s *Server) Waiting(t testing.TB) map[string]int64 {
	t.Helper()
	pairs := s.infoLine(t, "redis-cell", "redis-cell_cl_waiting")
	if pairs == nil {
		t.Fatal("no cl_waiting line in INFO redis-cell")
	}
	counts := map[string]int64{}
	for name, value := range pairs {
		counts[name] = count(t, name, value)
	}
	return counts
}

// infoLine is the name=value pairs of the line of INFO section that begins with name and a
// colon; nil where there is none.
func (s *Server) infoLine(t testing.TB, section, name string) map[string]string {
	t.Helper()
	info := s.Do(t, "INFO", section).(string)
	for _, line := range strings.Split(info, "\n") {
		rest, found := strings.CutPrefix(strings.TrimSpace(line), name+":")
		if !found {
			continue
		}
		pairs := map[string]string{}
		for _, pair := range strings.Split(rest, ",") {
			key, value, _ := strings.Cut(pair, "=")
			pairs[key] = value
		}
		return pairs
	}
	return nil
}

func count(t testing.TB, name, value string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil {
		t.Fatalf("%s=%s: %v", name, value, err)
	}
	return n
}
