// Package redis_rate is a drop-in for github.com/go-redis/redis_rate/v10: the same exported
// API, deciding with redis-cell's CL.THROTTLE (GCRA, as redis_rate's script is) in one command,
// or with the Functions library on a server without the module. Change the import path and
// nothing else; docs/clients.md lists what differs.
//
// Its keys are "cl:rate:" + key, not redis_rate's "rate:" + key, so that a fleet switched over
// a host at a time never has the two write one key: during the switch each counts on its own.
package redis_rate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"

	"rediscell.dev/cell"
	"rediscell.dev/cell/goredis"
)

// Prefix is what each key is stored under.
const Prefix = "cl:rate:"

// rediser is redis_rate's own parameter type, kept so that NewLimiter takes what it took: any
// go-redis client. Calls go through the client's Process.
type rediser interface {
	Eval(ctx context.Context, script string, keys []string, args ...interface{}) *redis.Cmd
	EvalSha(ctx context.Context, sha1 string, keys []string, args ...interface{}) *redis.Cmd
	ScriptExists(ctx context.Context, hashes ...string) *redis.BoolSliceCmd
	ScriptLoad(ctx context.Context, script string) *redis.StringCmd
	Del(ctx context.Context, keys ...string) *redis.IntCmd

	EvalRO(ctx context.Context, script string, keys []string, args ...interface{}) *redis.Cmd
	EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...interface{}) *redis.Cmd
}

// Limit is Rate events per Period, in bursts of up to Burst.
type Limit struct {
	Rate   int
	Burst  int
	Period time.Duration
}

func (l Limit) String() string {
	period := l.Period.String()
	switch l.Period {
	case time.Second:
		period = "s"
	case time.Minute:
		period = "m"
	case time.Hour:
		period = "h"
	}
	return fmt.Sprintf("%d req/%s (burst %d)", l.Rate, period, l.Burst)
}

// IsZero reports whether the limit is the zero Limit.
func (l Limit) IsZero() bool {
	return l == Limit{}
}

// PerSecond is rate a second, in bursts of rate.
func PerSecond(rate int) Limit {
	return Limit{Rate: rate, Burst: rate, Period: time.Second}
}

// PerMinute is rate a minute, in bursts of rate.
func PerMinute(rate int) Limit {
	return Limit{Rate: rate, Burst: rate, Period: time.Minute}
}

// PerHour is rate an hour, in bursts of rate.
func PerHour(rate int) Limit {
	return Limit{Rate: rate, Burst: rate, Period: time.Hour}
}

// Limiter decides how often events may happen, a key at a time.
type Limiter struct {
	rdb  rediser
	cell *cell.Cell
}

// NewLimiter is a Limiter over a go-redis client: a *redis.Client, *redis.ClusterClient or
// *redis.Ring.
func NewLimiter(rdb rediser) *Limiter {
	l := &Limiter{rdb: rdb}
	if client, ok := rdb.(goredis.Client); ok {
		l.cell = cell.New(goredis.NewTransport(client))
	}
	return l
}

// Allow is AllowN with n of 1.
func (l Limiter) Allow(ctx context.Context, key string, limit Limit) (*Result, error) {
	return l.AllowN(ctx, key, limit, 1)
}

// AllowN reports whether n events may happen now, and takes them if they may.
func (l Limiter) AllowN(ctx context.Context, key string, limit Limit, n int) (*Result, error) {
	return l.decide(ctx, key, limit, n, false)
}

// AllowAtMost takes as many of n events as may happen now, and reports how many it took.
func (l Limiter) AllowAtMost(ctx context.Context, key string, limit Limit, n int) (*Result, error) {
	return l.decide(ctx, key, limit, n, true)
}

// Reset forgets the key's events.
func (l *Limiter) Reset(ctx context.Context, key string) error {
	if l.rdb == nil {
		return errNoClient
	}
	return l.rdb.Del(ctx, Prefix+key).Err()
}

// Result is a decision.
type Result struct {
	// Limit is the limit the decision was made under.
	Limit Limit
	// Allowed is how many events were taken: n or 0 (AllowN), up to n (AllowAtMost).
	Allowed int
	// Remaining is how many more events would be admitted now; 0 on a denial.
	Remaining int
	// RetryAfter is how long until the events asked for would fit, -1 when they were admitted
	// or when no wait would admit them (more than the burst).
	RetryAfter time.Duration
	// ResetAfter is how long until the key is back to its full burst.
	ResetAfter time.Duration
}

var errNoClient = errors.New("redis_rate (redis-cell): the Limiter was not made by NewLimiter with a go-redis client")

func (l Limiter) decide(ctx context.Context, key string, limit Limit, n int, atMost bool) (*Result, error) {
	if l.cell == nil {
		return nil, errNoClient
	}
	if n < 0 {
		return nil, fmt.Errorf("redis_rate (redis-cell): n must be >= 0, not %d", n)
	}
	if limit.Rate <= 0 || limit.Period <= 0 {
		return nil, fmt.Errorf("redis_rate (redis-cell): %v: Rate and Period must be > 0", limit)
	}
	// A burst of 0 admits nothing, ever: no call is needed to say so.
	if limit.Burst <= 0 {
		return &Result{Limit: limit, RetryAfter: -1}, nil
	}
	count, period, err := whole(limit.Rate, limit.Period)
	if err != nil {
		return nil, err
	}
	options := []cell.Option{cell.Quantity(int64(n))}
	if atMost {
		options = append(options, cell.AtMost())
	}
	reply, err := l.cell.Throttle(ctx, Prefix+key, int64(limit.Burst)-1, count, period, options...)
	if err != nil {
		return nil, err
	}
	result := &Result{Limit: limit, RetryAfter: -1, ResetAfter: reply.ResetAfter}
	if reply.Limited {
		result.RetryAfter = reply.RetryAfter
		return result, nil
	}
	result.Allowed, result.Remaining = n, int(reply.Remaining)
	if atMost {
		result.Allowed = int(reply.Granted)
	}
	return result, nil
}

// whole is the limit as CL.THROTTLE takes it, in whole milliseconds: count events per period
// with the same interval between them. A period that is no whole number of milliseconds is
// stretched to one, its count with it (500 µs at 1 a period is 2 a millisecond).
func whole(rate int, period time.Duration) (int64, time.Duration, error) {
	const ms = int64(time.Millisecond)
	gcd, other := int64(period), ms
	for other != 0 {
		gcd, other = other, gcd%other
	}
	stretch, millis := ms/gcd, int64(period)/gcd
	if int64(rate) > math.MaxInt64/stretch || millis > math.MaxInt64/ms {
		return 0, 0, fmt.Errorf("redis_rate (redis-cell): %d a %v is out of CL.THROTTLE's range", rate, period)
	}
	return int64(rate) * stretch, time.Duration(millis * ms), nil
}
