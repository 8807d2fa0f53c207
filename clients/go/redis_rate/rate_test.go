package redis_rate_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"rediscell.dev/cell/internal/servertest"
	"rediscell.dev/cell/redis_rate"
)

func TestOnEachRoute(t *testing.T) {
	ctx := context.Background()
	for _, with := range []servertest.With{servertest.Module, servertest.Library} {
		t.Run(with.String(), func(t *testing.T) {
			server := servertest.Start(t, with, nil)
			rdb := redis.NewClient(&redis.Options{Addr: server.Addr})
			defer rdb.Close()
			limiter := redis_rate.NewLimiter(rdb)
			limit := redis_rate.PerMinute(3)
			for want := 2; want >= 0; want-- {
				res, err := limiter.Allow(ctx, "k", limit)
				if err != nil || res.Allowed != 1 || res.Remaining != want || res.RetryAfter != -1 {
					t.Fatalf("allowed: %+v %v", res, err)
				}
			}
			res, err := limiter.Allow(ctx, "k", limit)
			if err != nil || res.Allowed != 0 || res.Remaining != 0 || res.RetryAfter <= 19*time.Second || res.RetryAfter > 20*time.Second {
				t.Fatalf("denied: %+v %v", res, err)
			}
			if ttl := server.Do(t, "PTTL", redis_rate.Prefix+"k").(int64); ttl <= 0 {
				t.Fatalf("the key's ttl: %d", ttl)
			}
			if server.Do(t, "EXISTS", "rate:k").(int64) != 0 {
				t.Fatal("wrote redis_rate's own key")
			}
			res, err = limiter.AllowAtMost(ctx, "m", limit, 5)
			if err != nil || res.Allowed != 3 || res.Remaining != 0 {
				t.Fatalf("at most: %+v %v", res, err)
			}
			if err := limiter.Reset(ctx, "k"); err != nil {
				t.Fatal(err)
			}
			if res, err := limiter.Allow(ctx, "k", limit); err != nil || res.Remaining != 2 {
				t.Fatalf("after a reset: %+v %v", res, err)
			}
			// A burst of 0 admits nothing and asks nothing.
			if res, err := limiter.Allow(ctx, "zero", redis_rate.Limit{Rate: 1, Period: time.Second}); err != nil || res.Allowed != 0 || res.RetryAfter != -1 {
				t.Fatalf("a burst of 0: %+v %v", res, err)
			}
			// A period under a millisecond: 1 a 250 µs is 4 a millisecond.
			fine := redis_rate.Limit{Rate: 1, Burst: 2, Period: 250 * time.Microsecond}
			if res, err := limiter.AllowN(ctx, "fine", fine, 2); err != nil || res.Allowed != 2 || res.ResetAfter != time.Millisecond {
				t.Fatalf("a period under a millisecond: %+v %v", res, err)
			}
			// Bad input: an error, and nothing written.
			for name, call := range map[string]func() error{
				"a rate of 0": func() error {
					_, err := limiter.Allow(ctx, "bad", redis_rate.Limit{Burst: 1, Period: time.Second})
					return err
				},
				"a negative n": func() error {
					_, err := limiter.AllowN(ctx, "bad", limit, -1)
					return err
				},
				"a rate past a nanosecond an event": func() error {
					_, err := limiter.Allow(ctx, "bad", redis_rate.Limit{Rate: 2, Burst: 1, Period: time.Nanosecond})
					return err
				},
			} {
				if err := call(); err == nil {
					t.Fatalf("%s: no error", name)
				}
			}
			if server.Do(t, "EXISTS", redis_rate.Prefix+"bad").(int64) != 0 {
				t.Fatal("bad input wrote its key")
			}
		})
	}
}

func TestOnACluster(t *testing.T) {
	ctx := context.Background()
	nodes := servertest.Cluster(t, servertest.Module)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: servertest.Addrs(nodes)})
	defer rdb.Close()
	limiter := redis_rate.NewLimiter(rdb)
	for _, key := range []string{"a", "b", "c", "d"} {
		if res, err := limiter.Allow(ctx, key, redis_rate.PerSecond(5)); err != nil || res.Remaining != 4 {
			t.Fatalf("%s: %+v %v", key, res, err)
		}
	}
}

func TestLimitReadsAsRedisRatesDoes(t *testing.T) {
	for limit, want := range map[redis_rate.Limit]string{
		redis_rate.PerSecond(10):                      "10 req/s (burst 10)",
		redis_rate.PerMinute(5):                       "5 req/m (burst 5)",
		redis_rate.PerHour(2):                         "2 req/h (burst 2)",
		{Rate: 1, Burst: 3, Period: 90 * time.Second}: "1 req/1m30s (burst 3)",
	} {
		if got := limit.String(); got != want {
			t.Errorf("%v: %q", want, got)
		}
	}
	if !(redis_rate.Limit{}).IsZero() || redis_rate.PerSecond(1).IsZero() {
		t.Fatal("IsZero")
	}
	var unmade redis_rate.Limiter
	if _, err := unmade.Allow(context.Background(), "k", redis_rate.PerSecond(1)); err == nil || !strings.Contains(err.Error(), "NewLimiter") {
		t.Fatalf("a Limiter not made by NewLimiter: %v", err)
	}
}
