// Package valkeygo sends a Cell's calls over valkey-go: a server's client, a cluster's, a
// sentinel's (anything that is a valkey.Client).
package valkeygo

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/valkey-io/valkey-go"

	"rediscell.dev/cell"
	"rediscell.dev/cell/internal/hold"
)

// New makes the limiters over a valkey-go client.
func New(client valkey.Client) *cell.Cell {
	return cell.New(NewTransport(client))
}

// Transport sends calls over a valkey-go client. A held call (BLOCK) goes on a dedicated
// connection from valkey-go's blocking pool rather than pipelined behind other calls; valkey-go
// never sends it again (it retries only read-only calls), and the connection is closed when
// the call's context is cancelled first, so that the server's waiter is disconnected and takes
// nothing.
type Transport struct {
	client valkey.Client

	mu sync.Mutex
	// busy are the connections of held calls in flight, which Close cuts.
	busy   map[valkey.DedicatedClient]bool
	closed bool
}

// NewTransport is the Transport over a valkey-go client.
func NewTransport(client valkey.Client) *Transport {
	return &Transport{client: client, busy: map[valkey.DedicatedClient]bool{}}
}

// Do sends one call.
func (t *Transport) Do(ctx context.Context, req cell.Request) (any, error) {
	if !req.Held() {
		cmd, err := t.build(req)
		if err != nil {
			return nil, err
		}
		return t.client.Do(ctx, cmd).ToAny()
	}
	// The first send goes where the client routes the key (addr ""), the next to the node a
	// redirect names. valkey-go takes a command back once it is answered: each send builds
	// its own.
	send := func(addr string, asking bool) (any, error) {
		target := t.client
		if addr != "" {
			node, ok := t.client.Nodes()[addr]
			if !ok {
				return nil, fmt.Errorf("cell: a held call was redirected to %s, a node the client does not know", addr)
			}
			target = node
		}
		cmd, err := t.build(req)
		if err != nil {
			return nil, err
		}
		return t.held(ctx, target, cmd, req.Hold, asking)
	}
	return hold.Follow("", send, nil)
}

// held sends a held call on a connection dedicated to it (from valkey-go's blocking pool),
// closed when the call's context ends first: valkey-go reads on past a cancelled context
// there, and a disconnected waiter takes nothing. The connection is waited for as long as the
// context allows (valkey-go waits for one without it).
func (t *Transport) held(ctx context.Context, target valkey.Client, cmd valkey.Completed, wait time.Duration, asking bool) (any, error) {
	held, stop := hold.Context(ctx, wait, hold.MinGrace)
	defer stop()
	type dedicated struct {
		client  valkey.DedicatedClient
		release func()
	}
	acquired := make(chan dedicated, 1)
	go func() {
		client, release := target.Dedicate()
		acquired <- dedicated{client, release}
	}()
	var d dedicated
	select {
	case d = <-acquired:
	case <-held.Done():
		go func() { (<-acquired).release() }()
		return nil, hold.Err(ctx, held.Err())
	}
	defer d.release()
	if !t.track(d.client) {
		return nil, errors.New("cell: the Cell is closed")
	}
	defer t.untrack(d.client)
	unwatch := context.AfterFunc(held, d.client.Close)
	var reply valkey.ValkeyResult
	if asking {
		replies := d.client.DoMulti(held, target.B().Asking().Build(), cmd)
		reply = replies[len(replies)-1]
	} else {
		reply = d.client.Do(held, cmd)
	}
	// A close already under way must end before the connection goes back to the pool, or it
	// would cut whichever call the pool gives the connection to next.
	if !unwatch() {
		d.client.Close()
	}
	answer, err := reply.ToAny()
	if err != nil {
		return nil, hold.Err(ctx, err)
	}
	return answer, nil
}

// build is the call as valkey-go sends it, its keys marked so that a cluster client routes
// it. valkey-go panics on keys of different slots, which CL.ALL may be given: that is an
// error here, as the server's CROSSSLOT is.
func (t *Transport) build(req cell.Request) (cmd valkey.Completed, err error) {
	defer func() {
		if refused := recover(); refused != nil {
			err = fmt.Errorf("cell: %v", refused)
		}
	}()
	keys := req.KeyNames()
	head, tail := req.Words, []string(nil)
	if len(keys) > 0 {
		head, tail = req.Words[:req.FirstKey], req.Words[req.FirstKey+len(keys):]
	}
	built := t.client.B().Arbitrary(head...).Keys(keys...).Args(tail...)
	if req.Held() {
		return built.Blocking(), nil
	}
	return built.Build(), nil
}

// track marks a dedicated connection in flight, unless the Transport is closed.
func (t *Transport) track(d valkey.DedicatedClient) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.busy[d] = true
	return true
}

func (t *Transport) untrack(d valkey.DedicatedClient) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.busy, d)
}

// Close cuts the connections of held calls in flight, which then return an error (their
// waiters take nothing); the client, and its blocking pool, stay the application's.
func (t *Transport) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	for d := range t.busy {
		d.Close()
	}
	return nil
}
