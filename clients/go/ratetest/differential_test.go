// The drop-in against redis_rate v10.0.1 itself: the same calls, on one server under a
// controlled clock, must give the same Allowed and Remaining, and durations within a
// millisecond (the drop-in's are whole milliseconds, rounded up; redis_rate's are float
// seconds of microseconds). What differs by design is skipped by name, as docs/clients.md
// lists it.
package ratetest

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	upstream "github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"rediscell.dev/cell/internal/servertest"
	droppedIn "rediscell.dev/cell/redis_rate"
)

type limits struct {
	theirs upstream.Limit
	ours   droppedIn.Limit
}

func limit(rate, burst int, period time.Duration) limits {
	return limits{upstream.Limit{Rate: rate, Burst: burst, Period: period}, droppedIn.Limit{Rate: rate, Burst: burst, Period: period}}
}

func TestDecisionsAreRedisRatesUnderAControlledClock(t *testing.T) {
	for _, with := range []servertest.With{servertest.Module, servertest.Library} {
		t.Run(with.String(), func(t *testing.T) { differential(t, with) })
	}
}

func differential(t *testing.T, with servertest.With) {
	servertest.RequireClock(t)
	ctx := context.Background()
	now := int64(1_900_000_000_000_000)
	clock := servertest.NewClock(t, now)
	server := servertest.Start(t, with, clock)
	rdb := redis.NewClient(&redis.Options{Addr: server.Addr})
	defer rdb.Close()
	theirs, ours := upstream.NewLimiter(rdb), droppedIn.NewLimiter(rdb)

	keys := map[string]limits{
		"second":  limit(10, 10, time.Second),
		"minute":  limit(100, 20, time.Minute),
		"odd":     limit(3, 5, time.Second),
		"hour":    limit(1000, 1, time.Hour),
		"fine":    limit(7, 4, 70*time.Millisecond),
		"sub-ms":  limit(1, 3, 900*time.Microsecond),
		"bursty":  limit(2, 50, time.Second),
		"a-third": limit(3, 3, time.Second),
	}
	names := make([]string, 0, len(keys))
	for name := range keys {
		names = append(names, name)
	}
	slices.Sort(names)
	// AllowAtMost of nothing on an exhausted key, which the random calls seldom reach: the
	// drop-in looks and answers admitted, redis_rate names the wait for one event.
	exhausted := limit(5, 5, time.Second)
	if _, err := theirs.AllowN(ctx, "exhausted", exhausted.theirs, 5); err != nil {
		t.Fatal(err)
	}
	if _, err := ours.AllowN(ctx, "exhausted", exhausted.ours, 5); err != nil {
		t.Fatal(err)
	}
	their, errTheir := theirs.AllowAtMost(ctx, "exhausted", exhausted.theirs, 0)
	mine, errMine := ours.AllowAtMost(ctx, "exhausted", exhausted.ours, 0)
	if errTheir != nil || errMine != nil || their.Allowed != 0 || their.RetryAfter <= 0 ||
		mine.Allowed != 0 || mine.Remaining != 0 || mine.RetryAfter != -1 {
		t.Fatalf("at most nothing, exhausted: redis_rate %+v %v, drop-in %+v %v", their, errTheir, mine, errMine)
	}
	random := rand.New(rand.NewPCG(49, 50))
	calls := 2000
	if testing.Short() {
		calls = 300
	}
	compared, skipped := 0, map[string]int{}
	for step := range calls {
		// Time moves on by a random number of microseconds, up to about a unit's interval.
		name := names[random.IntN(len(names))]
		l := keys[name]
		interval := l.ours.Period / time.Duration(l.ours.Rate)
		if random.IntN(4) > 0 {
			now += 1 + random.Int64N(int64(interval/time.Microsecond)+1)
			clock.Set(t, now)
		}
		n := 1 + random.IntN(3)
		if random.IntN(10) == 0 {
			n = random.IntN(l.ours.Burst + 3)
		}
		atMost := random.IntN(4) == 0
		var mine *droppedIn.Result
		var their *upstream.Result
		var errMine, errTheir error
		if atMost {
			their, errTheir = theirs.AllowAtMost(ctx, name, l.theirs, n)
			mine, errMine = ours.AllowAtMost(ctx, name, l.ours, n)
		} else {
			their, errTheir = theirs.AllowN(ctx, name, l.theirs, n)
			mine, errMine = ours.AllowN(ctx, name, l.ours, n)
		}
		if errTheir != nil || errMine != nil {
			t.Fatalf("step %d: %v / %v", step, errTheir, errMine)
		}
		what := fmt.Sprintf("step %d, %s %v, n %d, at most %v: redis_rate %+v, drop-in %+v", step, name, l.ours, n, atMost, *their, *mine)
		// redis_rate's instants are float seconds since 2017, to within a few ulps of that
		// (tenths of a microsecond now): an exact fit may land a hair past the edge, where it
		// denies with a wait of nothing, or grants one less at most; and what remains a hair
		// under a whole number, which it truncates to one less than the exact count.
		noise := time.Duration(4 * math.Pow(2, -52) * float64(now/1_000_000-1_483_228_800) * 1e9)
		if mine.Allowed != their.Allowed {
			pastAnExactFit := mine.Allowed > 0 && their.Allowed == 0 && their.RetryAfter > 0 && their.RetryAfter <= noise
			oneLessAtMost := atMost && their.Allowed == mine.Allowed-1 && their.Remaining == 0
			if !pastAnExactFit && !oneLessAtMost {
				t.Fatalf("%s", what)
			}
			skipped["redis_rate's float past an exact fit, then both reset"]++
			resync(t, ctx, theirs, ours, name)
			continue
		}
		if mine.Remaining != their.Remaining {
			exact := (float64(l.ours.Burst)*float64(interval) - float64(their.ResetAfter)) / float64(interval)
			if mine.Remaining != their.Remaining+1 || math.Abs(exact-float64(mine.Remaining))*float64(interval) > float64(noise) {
				t.Fatalf("%s", what)
			}
			skipped["redis_rate's float under a whole remaining"]++
		}
		near := func(a, b time.Duration) bool {
			return a-b <= time.Millisecond && b-a <= time.Millisecond
		}
		switch {
		case atMost && n == 0 && their.RetryAfter != -1:
			// AllowAtMost of nothing is a look, which the drop-in answers as admitted;
			// redis_rate answers an exhausted key with the wait for one event.
			skipped["at most nothing, on an exhausted key"]++
			if mine.Allowed != 0 || mine.RetryAfter != -1 {
				t.Fatalf("%s", what)
			}
		case atMost && their.Allowed > 0 && their.Allowed < n:
			// redis_rate charges AllowAtMost's fraction of an event too, and the drop-in whole
			// events: the waits differ by that fraction, and the keys part, so both start again.
			skipped["a partial grant, then both reset"]++
			resync(t, ctx, theirs, ours, name)
		case !atMost && n > l.ours.Burst:
			// More than the burst never fits: the drop-in says so (-1); redis_rate names a wait
			// after which it is denied again.
			skipped["more than the burst"]++
			if mine.RetryAfter != -1 {
				t.Fatalf("%s", what)
			}
		case (mine.RetryAfter == -1) != (their.RetryAfter == -1) || mine.RetryAfter != -1 && !near(mine.RetryAfter, their.RetryAfter):
			t.Fatalf("retry: %s", what)
		case !near(mine.ResetAfter, their.ResetAfter):
			t.Fatalf("reset: %s", what)
		default:
			compared++
		}
	}
	t.Logf("%d calls compared in full; %v", compared, skipped)
	if compared < calls*3/4 {
		t.Fatalf("only %d of %d calls compared in full", compared, calls)
	}
}

// resync starts both limiters' key again, where their decisions have parted.
func resync(t *testing.T, ctx context.Context, theirs *upstream.Limiter, ours *droppedIn.Limiter, key string) {
	if err := theirs.Reset(ctx, key); err != nil {
		t.Fatal(err)
	}
	if err := ours.Reset(ctx, key); err != nil {
		t.Fatal(err)
	}
}
