package goredis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"rediscell.dev/cell"
	"rediscell.dev/cell/goredis"
	"rediscell.dev/cell/internal/celltest"
	"rediscell.dev/cell/internal/servertest"
)

func TestCell(t *testing.T) {
	celltest.Run(t, func(t *testing.T, target celltest.Target) *cell.Cell {
		var rdb redis.UniversalClient
		if target.Cluster {
			rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: target.Addrs, ReadTimeout: target.ReadTimeout,
				Username: target.User, Password: target.Password})
		} else {
			rdb = redis.NewClient(&redis.Options{Addr: target.Addrs[0], ReadTimeout: target.ReadTimeout,
				Username: target.User, Password: target.Password})
		}
		c := goredis.New(rdb)
		t.Cleanup(func() {
			_ = c.Close()
			_ = rdb.Close()
		})
		return c
	})
}

// A ring shards keys over servers of its own: calls, and held calls, go to the key's shard.
func TestRing(t *testing.T) {
	ctx := context.Background()
	a := servertest.Start(t, servertest.Module, nil)
	b := servertest.Start(t, servertest.Module, nil)
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": a.Addr, "b": b.Addr}, ReadTimeout: 500 * time.Millisecond})
	c := goredis.New(ring)
	t.Cleanup(func() { _ = c.Close(); _ = ring.Close() })
	keys := []string{"k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8"}
	for _, key := range keys {
		if _, err := c.Fixed(ctx, key, 1, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if a.Do(t, "DBSIZE").(int64) == 0 || b.Do(t, "DBSIZE").(int64) == 0 {
		t.Fatal("a shard holds none of eight keys")
	}
	for _, key := range keys[:2] {
		reply, err := c.Fixed(ctx, key, 1, time.Second, cell.Block(5*time.Second))
		if err != nil || reply.Limited {
			t.Fatalf("held on the ring: %+v %v", reply, err)
		}
		shard, err := ring.GetShardClientForKey(key)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := shard.Exists(ctx, key).Result(); err != nil || n != 1 {
			t.Fatalf("%s is not on its shard: %d %v", key, n, err)
		}
	}
}

// A failover client finds its primary through a sentinel, and so do held calls.
func TestFailoverClient(t *testing.T) {
	primary := servertest.Start(t, servertest.Module, nil)
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: "primary", SentinelAddrs: []string{servertest.Sentinel(t, primary)}, ReadTimeout: 500 * time.Millisecond,
	})
	c := goredis.New(rdb)
	t.Cleanup(func() { _ = c.Close(); _ = rdb.Close() })
	celltest.ThroughASentinel(t, c, primary)
}

// More calls held at once than the client's pool has connections: each has its own, and each
// is answered by the server at the context's deadline.
func TestMoreHeldCallsThanThePoolSize(t *testing.T) {
	server := servertest.Start(t, servertest.Module, nil)
	rdb := redis.NewClient(&redis.Options{Addr: server.Addr, PoolSize: 2})
	c := goredis.New(rdb)
	t.Cleanup(func() { _ = c.Close(); _ = rdb.Close() })
	if _, err := c.Fixed(context.Background(), "pool", 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	began := time.Now()
	errs := make(chan error, 6)
	for range 6 {
		go func() {
			reply, err := c.Fixed(ctx, "pool", 1, time.Minute, cell.Block(0))
			if err == nil && !reply.Limited {
				err = errors.New("admitted")
			}
			errs <- err
		}()
	}
	for range 6 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// Each waited for its deadline, and none for another's connection (two rounds would take
	// three seconds).
	if took := time.Since(began); took < 1400*time.Millisecond || took > 2900*time.Millisecond {
		t.Fatalf("the six took %v", took)
	}
}
