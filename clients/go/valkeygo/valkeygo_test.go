package valkeygo_test

import (
	"testing"

	"github.com/valkey-io/valkey-go"

	"rediscell.dev/cell"
	"rediscell.dev/cell/internal/celltest"
	"rediscell.dev/cell/internal/servertest"
	"rediscell.dev/cell/valkeygo"
)

func TestCell(t *testing.T) {
	celltest.Run(t, func(t *testing.T, target celltest.Target) *cell.Cell {
		client, err := valkey.NewClient(valkey.ClientOption{
			InitAddress:       target.Addrs,
			ForceSingleClient: !target.Cluster,
			ConnWriteTimeout:  target.ReadTimeout,
			Username:          target.User,
			Password:          target.Password,
			// A user allowed the limiters alone may not turn client-side caching on.
			DisableCache: target.User != "",
		})
		if err != nil {
			t.Fatal(err)
		}
		c := valkeygo.New(client)
		t.Cleanup(func() {
			_ = c.Close()
			client.Close()
		})
		return c
	})
}

// A client that finds its primary through a sentinel, and so do held calls.
func TestSentinel(t *testing.T) {
	primary := servertest.Start(t, servertest.Module, nil)
	client, err := valkey.NewClient(valkey.ClientOption{
		InitAddress: []string{servertest.Sentinel(t, primary)},
		Sentinel:    valkey.SentinelOption{MasterSet: "primary"},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := valkeygo.New(client)
	t.Cleanup(func() { _ = c.Close(); client.Close() })
	celltest.ThroughASentinel(t, c, primary)
}
