package goredis_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"rediscell.dev/cell"
	"rediscell.dev/cell/goredis"
	"rediscell.dev/cell/internal/celltest"
)

func TestCell(t *testing.T) {
	celltest.Run(t, func(t *testing.T, target celltest.Target) *cell.Cell {
		var rdb redis.UniversalClient
		if target.Cluster {
			rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: target.Addrs, ReadTimeout: target.ReadTimeout})
		} else {
			rdb = redis.NewClient(&redis.Options{Addr: target.Addrs[0], ReadTimeout: target.ReadTimeout})
		}
		c := goredis.New(rdb)
		t.Cleanup(func() {
			_ = c.Close()
			_ = rdb.Close()
		})
		return c
	})
}
