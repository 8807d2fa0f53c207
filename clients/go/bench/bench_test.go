// The drop-in against go-redis/redis_rate v10.0.1 (a module of the benchmark's own, so that
// redis_rate never enters the client's go.mod), run by scripts/bench.sh (PARTS=go) on servers
// it starts:
//
//   - BenchmarkDecisions: Allow calls a second from this process, on 10,000 keys at 1,000 a
//     second each (so nearly every call is admitted), from GOMAXPROCS×4 goroutines over as
//     many connections: the drop-in on a server with the module (BENCH_MODULE_ADDR) and on one
//     with the library (BENCH_LIBRARY_ADDR), redis_rate on the first.
//   - BenchmarkInstructions: server instructions per Allow, counted by callgrind on the server
//     at BENCH_CALLGRIND_ADDR (its pid BENCH_CALLGRIND_PID, its dumps in BENCH_CALLGRIND_DIR)
//     only while 2,000 measured calls run, round 1,000 keys each called once first.
package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	upstream "github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	droppedIn "rediscell.dev/cell/redis_rate"
)

const parallelism = 4

// allow is one Allow of a limiter, the drop-in's or redis_rate's.
type allow func(ctx context.Context, key string) (bool, error)

func limiters(rdb *redis.Client) map[string]allow {
	ours, theirs := droppedIn.NewLimiter(rdb), upstream.NewLimiter(rdb)
	return map[string]allow{
		"drop-in": func(ctx context.Context, key string) (bool, error) {
			res, err := ours.Allow(ctx, key, droppedIn.PerSecond(1000))
			return err == nil && res.Allowed == 1, err
		},
		"redis_rate": func(ctx context.Context, key string) (bool, error) {
			res, err := theirs.Allow(ctx, key, upstream.PerSecond(1000))
			return err == nil && res.Allowed == 1, err
		},
	}
}

func client(b *testing.B, env string, connections int) *redis.Client {
	addr := os.Getenv(env)
	if addr == "" {
		b.Skipf("skipped: %s names no server (scripts/bench.sh starts them)", env)
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: connections, MinIdleConns: connections})
	b.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func BenchmarkDecisions(b *testing.B) {
	const keys = 10_000
	connections := parallelism * testingProcs()
	runs := []struct{ name, env, limiter string }{
		{"drop-in on the module", "BENCH_MODULE_ADDR", "drop-in"},
		{"drop-in on the library", "BENCH_LIBRARY_ADDR", "drop-in"},
		{"redis_rate", "BENCH_MODULE_ADDR", "redis_rate"},
	}
	for _, run := range runs {
		b.Run(run.name, func(b *testing.B) {
			call := limiters(client(b, run.env, connections))[run.limiter]
			var next, admitted atomic.Int64
			b.SetParallelism(parallelism)
			b.ResetTimer()
			began := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					key := "bench:" + strconv.FormatInt(next.Add(7919)%keys, 10)
					ok, err := call(ctx, key)
					if err != nil {
						b.Error(err)
						return
					}
					if ok {
						admitted.Add(1)
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(began).Seconds(), "decisions/s")
			b.ReportMetric(float64(admitted.Load())/float64(b.N), "admitted")
		})
	}
}

func testingProcs() int {
	procs, err := strconv.Atoi(os.Getenv("GOMAXPROCS"))
	if err != nil || procs < 1 {
		return 2
	}
	return procs
}

func BenchmarkInstructions(b *testing.B) {
	const keys, calls = 1000, 2000
	pid, dumps := os.Getenv("BENCH_CALLGRIND_PID"), os.Getenv("BENCH_CALLGRIND_DIR")
	rdb := client(b, "BENCH_CALLGRIND_ADDR", 1)
	for _, name := range []string{"drop-in", "redis_rate"} {
		b.Run(name, func(b *testing.B) {
			call := limiters(rdb)[name]
			ctx := context.Background()
			key := func(at int) string { return fmt.Sprintf("instr:%s:%d", name, at%keys) }
			for at := range keys {
				if _, err := call(ctx, key(at)); err != nil {
					b.Fatal(err)
				}
			}
			var total int64
			for range b.N {
				callgrind(b, "-z", pid)
				callgrind(b, "-i", "on", pid)
				for at := range calls {
					if _, err := call(ctx, key(at)); err != nil {
						b.Fatal(err)
					}
				}
				callgrind(b, "-i", "off", pid)
				total += counted(b, pid, dumps)
			}
			b.ReportMetric(float64(total)/float64(b.N*calls), "instructions/decision")
		})
	}
}

func callgrind(b *testing.B, args ...string) {
	if out, err := exec.Command("callgrind_control", args...).CombinedOutput(); err != nil {
		b.Fatalf("callgrind_control %v: %v: %s", args, err, out)
	}
}

// counted is the instructions of the dump callgrind writes now.
func counted(b *testing.B, pid, dumps string) int64 {
	old, _ := filepath.Glob(filepath.Join(dumps, "out.*.[0-9]*"))
	for _, each := range old {
		_ = os.Remove(each)
	}
	callgrind(b, "-d", pid)
	all, _ := filepath.Glob(filepath.Join(dumps, "out.*"))
	var newest string
	var when time.Time
	for _, each := range all {
		if info, err := os.Stat(each); err == nil && info.ModTime().After(when) {
			newest, when = each, info.ModTime()
		}
	}
	source, err := os.ReadFile(newest)
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(source), "\n") {
		if fields := strings.Fields(line); len(fields) == 2 && fields[0] == "totals:" {
			total, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return total
		}
	}
	b.Fatalf("no totals in %s", newest)
	return 0
}
