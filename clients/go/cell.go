// Package cell is the redis-cell limiters, typed: each call decides atomically in the server
// and answers a Reply. The calls go to the module's commands, or to its Functions library on a
// server that has no module; a server with neither answers a ModuleMissingError. Periods,
// spans and waits are time.Duration, sent in whole milliseconds (MS).
//
// A Cell is made over a client of the application's: goredis.New (go-redis v9) or
// valkeygo.New (valkey-go). It is safe for concurrent use.
package cell

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Cell is the limiters over a Transport.
type Cell struct {
	transport Transport
	router    router
}

// New makes the limiters over a Transport: goredis.New and valkeygo.New make one for you.
func New(transport Transport) *Cell {
	c := &Cell{transport: transport}
	c.router.transport = transport
	return c
}

// Close closes what the Cell opened itself (the connections of held calls); the client it was
// made over stays open, the application's.
func (c *Cell) Close() error {
	return c.transport.Close()
}

// Route is where the calls go, asked of the server on first use.
func (c *Cell) Route(ctx context.Context) (Route, error) {
	return c.router.current(ctx)
}

// Throttle is CL.THROTTLE key max_burst count period: GCRA, redis-cell's own.
func (c *Cell) Throttle(ctx context.Context, key string, maxBurst, count int64, period time.Duration, options ...Option) (Reply, error) {
	p, err := millis("period", period)
	if err != nil {
		return Reply{}, err
	}
	return c.decide(ctx, cmdThrottle, options, key, itoa(maxBurst), itoa(count), p)
}

// Fixed is CL.FIXED key limit period: a count that starts again each period.
func (c *Cell) Fixed(ctx context.Context, key string, limit int64, period time.Duration, options ...Option) (Reply, error) {
	p, err := millis("period", period)
	if err != nil {
		return Reply{}, err
	}
	return c.decide(ctx, cmdFixed, options, key, itoa(limit), p)
}

// FixedCalendar is CL.FIXED key limit MONTH: a count that starts again with each calendar unit.
func (c *Cell) FixedCalendar(ctx context.Context, key string, limit int64, unit Calendar, options ...Option) (Reply, error) {
	return c.decide(ctx, cmdFixed, options, key, itoa(limit), string(unit))
}

// Window is CL.WINDOW key limit period: an exact sliding window, or Buckets(n) cells.
func (c *Cell) Window(ctx context.Context, key string, limit int64, period time.Duration, options ...Option) (Reply, error) {
	p, err := millis("period", period)
	if err != nil {
		return Reply{}, err
	}
	return c.decide(ctx, cmdWindow, options, key, itoa(limit), p)
}

// Smooth is CL.SMOOTH key permits period: Guava's RateLimiter, tryAcquire.
func (c *Cell) Smooth(ctx context.Context, key string, permits int64, period time.Duration, options ...Option) (Reply, error) {
	p, err := millis("period", period)
	if err != nil {
		return Reply{}, err
	}
	return c.decide(ctx, cmdSmooth, options, key, itoa(permits), p)
}

// Lease is CL.LEASE key limit lease_time holder: one of at most limit leases.
func (c *Cell) Lease(ctx context.Context, key string, limit int64, leaseTime time.Duration, holder string, options ...Option) (Reply, error) {
	t, err := millis("lease_time", leaseTime)
	if err != nil {
		return Reply{}, err
	}
	return c.decide(ctx, cmdLease, options, key, itoa(limit), t, holder)
}

// Release is CL.RELEASE key holder: whether the holder had a lease to give back.
func (c *Cell) Release(ctx context.Context, key, holder string) (bool, error) {
	reply, err := c.send(ctx, cmdRelease, nil, []string{key, holder})
	if err != nil {
		return false, err
	}
	n, err := integer(cmdRelease.name, reply)
	return n == 1, err
}

// Holders is CL.HOLDERS key: the leases held, each with the time it has left.
func (c *Cell) Holders(ctx context.Context, key string) ([]LeaseHolder, error) {
	reply, err := c.send(ctx, cmdHolders, nil, []string{key})
	if err != nil {
		return nil, err
	}
	items, err := list(cmdHolders.name, reply)
	if err != nil {
		return nil, err
	}
	holders := make([]LeaseHolder, 0, len(items)/2)
	for at := 0; at+1 < len(items); at += 2 {
		holder, err := text(cmdHolders.name, items[at])
		if err != nil {
			return nil, err
		}
		left, err := integer(cmdHolders.name, items[at+1])
		if err != nil {
			return nil, err
		}
		holders = append(holders, LeaseHolder{holder, wait(left)})
	}
	return holders, nil
}

// All is CL.ALL: every limiter admits the call, or none takes anything. The reply is the
// binding limiter's.
func (c *Cell) All(ctx context.Context, limiters []Limiter, options ...Option) (Reply, error) {
	reply, err := c.all(ctx, limiters, options)
	if err != nil {
		return Reply{}, err
	}
	return replyOf(cmdAll.name, reply)
}

// AllDetail is CL.ALL … DETAIL: each limiter's answer, in the order given.
func (c *Cell) AllDetail(ctx context.Context, limiters []Limiter, options ...Option) ([]Reply, error) {
	reply, err := c.all(ctx, limiters, append(slices.Clip(options), detail()))
	if err != nil {
		return nil, err
	}
	items, err := list(cmdAll.name, reply)
	if err != nil {
		return nil, err
	}
	replies := make([]Reply, 0, len(items))
	for _, item := range items {
		r, err := replyOf(cmdAll.name, item)
		if err != nil {
			return nil, err
		}
		replies = append(replies, r)
	}
	return replies, nil
}

func (c *Cell) all(ctx context.Context, limiters []Limiter, options []Option) (any, error) {
	if len(limiters) == 0 {
		return nil, errors.New("cell: CL.ALL takes at least one limiter")
	}
	params := []string{strconv.Itoa(len(limiters))}
	for _, l := range limiters {
		if l == nil {
			return nil, errors.New("cell: CL.ALL's limiter is nil")
		}
		params = append(params, l.key())
	}
	for _, l := range limiters {
		words, err := l.words()
		if err != nil {
			return nil, err
		}
		params = append(params, words...)
	}
	return c.send(ctx, cmdAll, options, params)
}

// Top is CL.TOP: the keys this node denied most; the module's alone.
func (c *Cell) Top(ctx context.Context, options ...Option) ([]Denied, error) {
	reply, err := c.send(ctx, cmdTop, options, nil)
	if err != nil {
		return nil, err
	}
	items, err := list(cmdTop.name, reply)
	if err != nil {
		return nil, err
	}
	denied := make([]Denied, 0, len(items)/3)
	for at := 0; at+2 < len(items); at += 3 {
		key, err := text(cmdTop.name, items[at])
		if err != nil {
			return nil, err
		}
		count, err := integer(cmdTop.name, items[at+1])
		if err != nil {
			return nil, err
		}
		bound, err := integer(cmdTop.name, items[at+2])
		if err != nil {
			return nil, err
		}
		denied = append(denied, Denied{key, count, bound})
	}
	return denied, nil
}

// Ban is CL.BAN key span: locks the key out from now, and answers the ban's end. The module's
// alone.
func (c *Cell) Ban(ctx context.Context, key string, span time.Duration) (time.Time, error) {
	s, err := millis("span", span)
	if err != nil {
		return time.Time{}, err
	}
	reply, err := c.send(ctx, cmdBan, nil, []string{key, s})
	if err != nil {
		return time.Time{}, err
	}
	end, err := integer(cmdBan.name, reply)
	return time.UnixMilli(end), err
}

// Unban is CL.UNBAN key: whether the key was banned. The module's alone.
func (c *Cell) Unban(ctx context.Context, key string) (bool, error) {
	reply, err := c.send(ctx, cmdUnban, nil, []string{key})
	if err != nil {
		return false, err
	}
	n, err := integer(cmdUnban.name, reply)
	return n == 1, err
}

func (c *Cell) decide(ctx context.Context, cmd command, options []Option, params ...string) (Reply, error) {
	reply, err := c.send(ctx, cmd, options, params)
	if err != nil {
		return Reply{}, err
	}
	return replyOf(cmd.name, reply)
}

// send sends a command with its parameters and options: its quantity where it takes one (one
// unit is what a call that gives none takes, so it is left out), MS where it takes periods,
// then the options, BLOCK last, shortened to the context's deadline.
func (c *Cell) send(ctx context.Context, cmd command, options []Option, params []string) (any, error) {
	settings, err := settle(options)
	if err != nil {
		return nil, err
	}
	args := append(make([]string, 0, len(params)+len(settings.words)+5), params...)
	if settings.quantity != 1 {
		switch cmd.quantity {
		case positional:
			args = append(args, itoa(settings.quantity))
		case keyword:
			args = append(args, "QUANTITY", itoa(settings.quantity))
		default:
			return nil, fmt.Errorf("cell: %s takes no quantity", cmd.name)
		}
	}
	if cmd.ms {
		args = append(args, "MS")
	}
	args = append(args, settings.words...)
	hold := settings.block
	if hold >= 0 {
		if hold, err = shortened(ctx, hold); err != nil {
			return nil, err
		}
		args = append(args, "BLOCK", itoa(hold.Milliseconds()))
	}
	return c.router.call(ctx, cmd, args, hold)
}

// shortened is a hold cut to the context's deadline, in whole milliseconds, so that the server
// answers by then: a call sent once, whose answer is the server's.
func shortened(ctx context.Context, hold time.Duration) (time.Duration, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return hold, nil
	}
	left := time.Until(deadline).Truncate(time.Millisecond)
	if left < time.Millisecond {
		return 0, context.DeadlineExceeded
	}
	if hold == 0 || hold > left {
		return left, nil
	}
	return hold, nil
}
