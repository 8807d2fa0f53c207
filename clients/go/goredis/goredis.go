// Package goredis sends a Cell's calls over go-redis v9: a server's client, a cluster's, a
// ring's or a failover client (anything that is a redis.UniversalClient).
package goredis

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"rediscell.dev/cell"
	"rediscell.dev/cell/internal/hold"
)

// New makes the limiters over a go-redis client.
func New(rdb redis.UniversalClient) *cell.Cell {
	return cell.New(NewTransport(rdb))
}

// Client is what the Transport sends through: a *redis.Client, *redis.ClusterClient or
// *redis.Ring (any redis.UniversalClient), or a *redis.Conn. Held calls need one of the first
// three, whose nodes the Transport can reach.
type Client interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// Transport sends calls over a go-redis client. Calls the server answers at once go through
// the client as any command does. A held call (BLOCK) goes on a connection of its own, from a
// client made for the node that holds its key with the node's options but none of its
// retries (go-redis would send a call again after a read timeout), no read timeout of its own
// and the context's deadline honoured.
type Transport struct {
	rdb Client

	mu     sync.Mutex
	holds  map[string]*redis.Client
	closed bool
}

// NewTransport is the Transport over a go-redis client.
func NewTransport(rdb Client) *Transport {
	return &Transport{rdb: rdb, holds: map[string]*redis.Client{}}
}

// Do sends one call.
func (t *Transport) Do(ctx context.Context, req cell.Request) (any, error) {
	if req.Held() {
		return t.held(ctx, req)
	}
	cmd := redis.NewCmd(ctx, args(req)...)
	if req.Keys > 0 {
		cmd.SetFirstKeyPos(int8(req.FirstKey))
	}
	_ = t.rdb.Process(ctx, cmd)
	return cmd.Result()
}

// Close closes the clients made for held calls.
func (t *Transport) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	var errs []error
	for addr, client := range t.holds {
		errs = append(errs, client.Close())
		delete(t.holds, addr)
	}
	return errors.Join(errs...)
}

func args(req cell.Request) []any {
	words := make([]any, len(req.Words))
	for at, word := range req.Words {
		words[at] = word
	}
	return words
}

// redirects is how many MOVED or ASK replies a held call follows.
const redirects = 3

func (t *Transport) held(ctx context.Context, req cell.Request) (any, error) {
	node, err := t.node(ctx, req)
	if err != nil {
		return nil, err
	}
	template, addr, asking := node.Options(), node.Options().Addr, false
	for range redirects {
		client, err := t.hold(template, addr)
		if err != nil {
			return nil, err
		}
		reply, err := t.send(ctx, client, req, asking)
		to, moved, redirected := redirect(err)
		if !redirected {
			return reply, err
		}
		// Neither MOVED nor ASK ran the call: sending it to the node named is still once.
		if cluster, ok := t.rdb.(*redis.ClusterClient); ok && moved {
			cluster.ReloadState(ctx)
		}
		addr, asking = to, !moved
	}
	return nil, errors.New("cell: a held call was redirected more than " + strconv.Itoa(redirects) + " times")
}

// node is the client of the node that holds the call's key.
func (t *Transport) node(ctx context.Context, req cell.Request) (*redis.Client, error) {
	keys := req.KeyNames()
	switch rdb := t.rdb.(type) {
	case *redis.Client:
		return rdb, nil
	case *redis.ClusterClient:
		if len(keys) == 0 {
			return nil, errors.New("cell: a held call needs a key")
		}
		return rdb.MasterForKey(ctx, keys[0])
	case *redis.Ring:
		if len(keys) == 0 {
			return nil, errors.New("cell: a held call needs a key")
		}
		return rdb.GetShardClientForKey(keys[0])
	}
	return nil, errors.New("cell: held calls (BLOCK) take a *redis.Client, *redis.ClusterClient or *redis.Ring")
}

// hold is the client for held calls to addr, made on first use from the node's options.
func (t *Transport) hold(template *redis.Options, addr string) (*redis.Client, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, errors.New("cell: the Cell is closed")
	}
	if client, ok := t.holds[addr]; ok {
		return client, nil
	}
	options := *template
	options.Addr = addr
	options.MaxRetries = -1
	options.ReadTimeout = -1
	options.ContextTimeoutEnabled = true
	options.MinIdleConns = 0
	options.MaxIdleConns = 4
	client := redis.NewClient(&options)
	t.holds[addr] = client
	return client, nil
}

// send sends a held call on a connection of its own. A caller's context cancelled while the
// server holds it closes the connection by CLIENT KILL (go-redis reads on regardless), and a
// disconnected waiter takes nothing.
func (t *Transport) send(ctx context.Context, client *redis.Client, req cell.Request, asking bool) (any, error) {
	grace := client.Options().ReadTimeout
	if grace <= 0 {
		grace = 3 * time.Second
	}
	grace = max(grace, 3*time.Second)
	held, stop := hold.Context(ctx, req.Hold, grace)
	defer stop()
	conn := client.Conn()
	defer conn.Close()
	if ctx.Done() != nil {
		id, err := conn.ClientID(held).Result()
		if err != nil {
			return nil, hold.Err(ctx, err)
		}
		unwatch := context.AfterFunc(held, func() {
			kill := context.WithoutCancel(ctx)
			client.ClientKillByFilter(kill, "ID", strconv.FormatInt(id, 10))
		})
		defer unwatch()
	}
	if asking {
		if err := conn.Do(held, "ASKING").Err(); err != nil {
			return nil, hold.Err(ctx, err)
		}
	}
	reply, err := conn.Do(held, args(req)...).Result()
	if err != nil {
		return nil, hold.Err(ctx, err)
	}
	return reply, nil
}

// redirect reads a MOVED or ASK reply: the node it names.
func redirect(err error) (addr string, moved, ok bool) {
	if err == nil {
		return "", false, false
	}
	fields := strings.Fields(err.Error())
	if len(fields) != 3 || (fields[0] != "MOVED" && fields[0] != "ASK") {
		return "", false, false
	}
	return fields[2], fields[0] == "MOVED", true
}
