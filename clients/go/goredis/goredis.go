// Package goredis sends a Cell's calls over go-redis v9: a server's client, a cluster's, a
// ring's or a failover client (anything that is a redis.UniversalClient).
package goredis

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

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
// the client as any command does. A held call (BLOCK) goes on a connection of its own to the
// node that holds its key, made with the node's options but none of its retries (go-redis
// sends a command again after a read timeout), no read timeout of its own and the context's
// deadline honoured; a context cancelled first closes that connection here, so that the
// server's waiter is disconnected (no command is sent to do it, so no ACL rule is needed).
type Transport struct {
	rdb Client

	mu sync.Mutex
	// idle are connections for held calls, a few by address, kept for the next.
	idle map[string][]*line
	// busy are the connections of held calls in flight, which Close cuts.
	busy   map[*line]bool
	closed bool
}

// NewTransport is the Transport over a go-redis client.
func NewTransport(rdb Client) *Transport {
	return &Transport{rdb: rdb, idle: map[string][]*line{}, busy: map[*line]bool{}}
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

// Close closes the connections kept for held calls, and cuts those of held calls in flight,
// which then return an error (their waiters take nothing).
func (t *Transport) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	for l := range t.busy {
		l.cut()
	}
	var errs []error
	for addr, lines := range t.idle {
		for _, l := range lines {
			errs = append(errs, l.client.Close())
		}
		delete(t.idle, addr)
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

// held sends a held call to the node that holds its key, and on to any node a redirect names
// (the node's options serve there too); a MOVED has a cluster client's slots renewed.
func (t *Transport) held(ctx context.Context, req cell.Request) (any, error) {
	node, err := t.node(ctx, req)
	if err != nil {
		return nil, err
	}
	template := node.Options()
	send := func(addr string, asking bool) (any, error) {
		return t.send(ctx, template, addr, req, asking)
	}
	var moved func()
	if cluster, ok := t.rdb.(*redis.ClusterClient); ok {
		moved = func() { cluster.ReloadState(ctx) }
	}
	return hold.Follow(template.Addr, send, moved)
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

// idlePerNode is how many connections for held calls are kept for the next, by node.
const idlePerNode = 4

// line is one connection for held calls, one at a time: a client of one connection, whose
// socket is at hand to close.
type line struct {
	addr   string
	client *redis.Client
	mu     sync.Mutex
	conn   net.Conn
	// done: the line was cut, and no connection it dials after is used.
	done bool
	// grace is how long past a held call's deadline its answer is waited for: the node's
	// read timeout, at least 3 s.
	grace time.Duration
}

// cut closes the line's socket: a read in progress on it fails at once, and so does a dial
// still under way.
func (l *line) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done = true
	if l.conn != nil {
		_ = l.conn.Close()
	}
}

// take is a line to addr: a kept one, or a new one made from the node's options.
func (t *Transport) take(template *redis.Options, addr string) (*line, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, errors.New("cell: the Cell is closed")
	}
	if kept := t.idle[addr]; len(kept) > 0 {
		l := kept[len(kept)-1]
		t.idle[addr] = kept[:len(kept)-1]
		t.busy[l] = true
		return l, nil
	}
	l := &line{addr: addr, grace: max(template.ReadTimeout, hold.MinGrace)}
	options := *template
	options.Addr = addr
	options.MaxRetries = -1
	options.ReadTimeout = -1
	options.ContextTimeoutEnabled = true
	options.PoolSize, options.MinIdleConns, options.MaxIdleConns = 1, 0, 1
	// What the node's client made for itself, or what one connection for one call at a time
	// has no use for: its push handlers (a second client would register them again), its
	// maintenance notifications, its client-side cache and its pipeline pool.
	options.PushNotificationProcessor = nil
	options.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	options.ClientSideCache, options.ClientSideCacheConfig = nil, nil
	options.PipelinePoolSize = -1
	dial := template.Dialer
	options.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.done {
			_ = conn.Close()
			return nil, errors.New("cell: the held call was cut as it connected")
		}
		l.conn = conn
		return conn, nil
	}
	l.client = redis.NewClient(&options)
	t.busy[l] = true
	return l, nil
}

// keep puts a line back for the next held call, or closes it.
func (t *Transport) keep(l *line) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.busy, l)
	if t.closed || len(t.idle[l.addr]) >= idlePerNode {
		_ = l.client.Close()
		return
	}
	t.idle[l.addr] = append(t.idle[l.addr], l)
}

// drop closes a line that was cut or failed.
func (t *Transport) drop(l *line) {
	t.mu.Lock()
	delete(t.busy, l)
	t.mu.Unlock()
	_ = l.client.Close()
}

// send sends a held call on a line of its own, closed when the caller's context is cancelled
// first: a disconnected waiter takes nothing. The line is kept for the next call only when
// the call was answered, and not cut.
func (t *Transport) send(ctx context.Context, template *redis.Options, addr string, req cell.Request, asking bool) (any, error) {
	l, err := t.take(template, addr)
	if err != nil {
		return nil, err
	}
	held, stop := hold.Context(ctx, req.Hold, l.grace)
	defer stop()
	unwatch := context.AfterFunc(held, l.cut)
	var reply any
	if asking {
		err = l.client.Do(held, "ASKING").Err()
	}
	if err == nil {
		reply, err = l.client.Do(held, args(req)...).Result()
	}
	var answered redis.Error
	if unwatch() && (err == nil || errors.As(err, &answered)) {
		t.keep(l)
	} else {
		t.drop(l)
	}
	if err != nil {
		return nil, hold.Err(ctx, err)
	}
	return reply, nil
}
