// Package valkeygo sends a Cell's calls over valkey-go: a server's client, a cluster's, a
// sentinel's (anything that is a valkey.Client).
package valkeygo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
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
	// grace is how long past a held call's deadline its answer is waited for.
	grace time.Duration
}

// NewTransport is the Transport over a valkey-go client.
func NewTransport(client valkey.Client) *Transport {
	return &Transport{client: client, grace: 3 * time.Second}
}

// Do sends one call.
func (t *Transport) Do(ctx context.Context, req cell.Request) (any, error) {
	cmd, err := t.build(req)
	if err != nil {
		return nil, err
	}
	if !req.Held() {
		return t.client.Do(ctx, cmd).ToAny()
	}
	// The first send goes where the client routes the key; a redirect names the node to try
	// next. Neither MOVED nor ASK ran the call: sending it there is still once.
	target, asking := t.client, false
	for range redirects {
		reply, err := t.held(ctx, target, cmd, req.Hold, asking)
		to, moved, redirected := hold.Redirect(err)
		if !redirected {
			return reply, err
		}
		node, ok := t.client.Nodes()[to]
		if !ok {
			return nil, fmt.Errorf("cell: a held call was redirected to %s, a node the client does not know: %w", to, err)
		}
		target, asking = node, !moved
		// valkey-go takes a command back once it is answered: a new one for the next send.
		if cmd, err = t.build(req); err != nil {
			return nil, err
		}
	}
	return nil, errors.New("cell: a held call was redirected more than " + strconv.Itoa(redirects) + " times")
}

// redirects is how many MOVED or ASK replies a held call follows.
const redirects = 3

// held sends a held call on a connection dedicated to it (from valkey-go's blocking pool),
// closed when the call's context ends first: valkey-go reads on past a cancelled context
// there, and a disconnected waiter takes nothing.
func (t *Transport) held(ctx context.Context, target valkey.Client, cmd valkey.Completed, wait time.Duration, asking bool) (any, error) {
	held, stop := hold.Context(ctx, wait, t.grace)
	defer stop()
	dedicated, release := target.Dedicate()
	defer release()
	unwatch := context.AfterFunc(held, dedicated.Close)
	defer unwatch()
	var reply valkey.ValkeyResult
	if asking {
		replies := dedicated.DoMulti(held, target.B().Asking().Build(), cmd)
		reply = replies[len(replies)-1]
	} else {
		reply = dedicated.Do(held, cmd)
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

// Close closes nothing: valkey-go's blocking pool is the client's.
func (t *Transport) Close() error {
	return nil
}
