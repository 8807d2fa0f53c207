package cellhttp_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dunglas/httpsfv"
	"github.com/redis/go-redis/v9"

	"rediscell.dev/cell"
	"rediscell.dev/cell/cellhttp"
	"rediscell.dev/cell/goredis"
	"rediscell.dev/cell/internal/servertest"
)

var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })

// serve serves handler on a loopback port for the test.
func serve(t *testing.T, handler http.Handler) *httptest.Server {
	server := httptest.NewServer(handler)
	t.Cleanup(server.Close)
	return server
}

func get(t *testing.T, url string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for at := 0; at+1 < len(header); at += 2 {
		req.Header.Set(header[at], header[at+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	return res
}

func limited(t *testing.T, limiter *cellhttp.Limiter, limits ...cellhttp.Limit) http.Handler {
	t.Helper()
	middleware, err := limiter.Limit(limits...)
	if err != nil {
		t.Fatal(err)
	}
	return middleware(ok)
}

func newCell(t *testing.T, rdb redis.UniversalClient) *cell.Cell {
	c := goredis.New(rdb)
	t.Cleanup(func() { _ = c.Close(); _ = rdb.Close() })
	return c
}

// item reads a draft-11 field: a list of one item, its parameters by name.
func item(t *testing.T, field string) (string, map[string]int64) {
	t.Helper()
	list, err := httpsfv.UnmarshalList([]string{field})
	if err != nil || len(list) != 1 {
		t.Fatalf("not a list of one item: %q (%v)", field, err)
	}
	it := list[0].(httpsfv.Item)
	params := map[string]int64{}
	for _, name := range it.Params.Names() {
		value, _ := it.Params.Get(name)
		params[name] = value.(int64)
	}
	return it.Value.(string), params
}

func TestThreeThen429WithTheFields(t *testing.T) {
	for _, with := range []servertest.With{servertest.Module, servertest.Library} {
		t.Run(with.String(), func(t *testing.T) {
			server := servertest.Start(t, with, nil)
			limiter := &cellhttp.Limiter{Cell: newCell(t, redis.NewClient(&redis.Options{Addr: server.Addr}))}
			app := serve(t, limited(t, limiter, cellhttp.Limit{
				Limiter: cell.Throttle{Key: "per-address", MaxBurst: 2, Count: 3, Period: time.Minute},
			}))
			for left := int64(2); left >= 0; left-- {
				res := get(t, app.URL)
				if res.StatusCode != http.StatusOK {
					t.Fatalf("status %d", res.StatusCode)
				}
				name, policy := item(t, res.Header.Get("RateLimit-Policy"))
				if name != "per-address" || policy["q"] != 3 || policy["w"] != 60 {
					t.Fatalf("RateLimit-Policy: %q", res.Header.Get("RateLimit-Policy"))
				}
				name, limit := item(t, res.Header.Get("RateLimit"))
				if name != "per-address" || limit["r"] != left || limit["t"] != 20*(3-left) {
					t.Fatalf("RateLimit: %q", res.Header.Get("RateLimit"))
				}
			}
			res := get(t, app.URL)
			_, limit := item(t, res.Header.Get("RateLimit"))
			if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") != "20" || limit["r"] != 0 || limit["t"] != 20 {
				t.Fatalf("the fourth: %d %v", res.StatusCode, res.Header)
			}
			if server.Do(t, "EXISTS", "ratelimit:per-address:{127.0.0.1}").(int64) != 1 {
				t.Fatal("no key <prefix><policy>:{<identity>}")
			}
		})
	}
}

// A denial by a later identity gives back what the earlier one took, on one server and on a
// cluster, where the two identities' keys sit on different nodes.
func TestADenialGivesBackWhatEarlierIdentitiesTook(t *testing.T) {
	run := func(t *testing.T, rdb redis.UniversalClient, peek func(key string) int64) {
		limiter := &cellhttp.Limiter{Cell: newCell(t, rdb)}
		app := serve(t, limited(t, limiter,
			cellhttp.Limit{Limiter: cell.Window{Key: "per-address", Limit: 10, Period: time.Minute}},
			cellhttp.Limit{Limiter: cell.Fixed{Key: "per-key", Limit: 1, Period: time.Minute}, By: cellhttp.Header("X-API-Key")},
		))
		if res := get(t, app.URL, "X-API-Key", "k1"); res.StatusCode != http.StatusOK {
			t.Fatalf("first: %d", res.StatusCode)
		}
		res := get(t, app.URL, "X-API-Key", "k1")
		if res.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("second: %d", res.StatusCode)
		}
		if policies := res.Header.Get("RateLimit-Policy"); policies != `"per-address";q=10;w=60, "per-key";q=1;w=60` {
			t.Fatalf("policies: %q", policies)
		}
		if name, _ := item(t, res.Header.Get("RateLimit")); name != "per-key" {
			t.Fatalf("binding: %q", name)
		}
		if got := peek("ratelimit:per-address:{127.0.0.1}"); got != 9 {
			t.Fatalf("the address's remaining after a refund: %d", got)
		}
		// Without the header only the address's limit applies.
		if res := get(t, app.URL); res.StatusCode != http.StatusOK {
			t.Fatalf("without a key: %d", res.StatusCode)
		}
	}
	t.Run("a server", func(t *testing.T) {
		server := servertest.Start(t, servertest.Module, nil)
		run(t, redis.NewClient(&redis.Options{Addr: server.Addr}), func(key string) int64 {
			reply := server.Do(t, "CL.WINDOW", key, 10, 60, 0).([]any)
			return reply[2].(int64)
		})
	})
	t.Run("a cluster", func(t *testing.T) {
		nodes := servertest.Cluster(t, servertest.Module)
		rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: servertest.Addrs(nodes)})
		run(t, rdb, func(key string) int64 {
			reply, err := rdb.Do(context.Background(), "CL.WINDOW", key, 10, 60, 0).Slice()
			if err != nil {
				t.Fatal(err)
			}
			return reply[2].(int64)
		})
	})
}

func TestAServerThatFailsIsNoDenial(t *testing.T) {
	server := servertest.Start(t, servertest.Module, nil)
	c := newCell(t, redis.NewClient(&redis.Options{Addr: server.Addr, MaxRetries: -1}))
	throttle := cellhttp.Limit{Limiter: cell.Throttle{Key: "p", MaxBurst: 2, Count: 3, Period: time.Minute}}
	var logged []string
	log := func(message string, err error) { logged = append(logged, message) }
	closed := serve(t, limited(t, &cellhttp.Limiter{Cell: c, Log: log}, throttle))
	open := serve(t, limited(t, &cellhttp.Limiter{Cell: c, Log: log, FailOpen: true}, throttle))
	server.Do(t, "CONFIG", "SET", "requirepass", "sesame")
	res := get(t, closed.URL)
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("RateLimit") != "" {
		t.Fatalf("failing closed: %d %v", res.StatusCode, res.Header)
	}
	res = get(t, open.URL)
	if res.StatusCode != http.StatusOK || res.Header.Get("RateLimit") != "" {
		t.Fatalf("failing open: %d %v", res.StatusCode, res.Header)
	}
	if len(logged) != 2 {
		t.Fatalf("logged: %v", logged)
	}
}

func TestTheOtherForms(t *testing.T) {
	server := servertest.Start(t, servertest.Module, nil)
	c := newCell(t, redis.NewClient(&redis.Options{Addr: server.Addr}))
	fixed := func(key string) cellhttp.Limit {
		return cellhttp.Limit{Limiter: cell.Fixed{Key: key, Limit: 5, Calendar: cell.Month}}
	}
	for standard, want := range map[string]map[string]string{
		"draft-7": {"RateLimit-Policy": "5;w=2678400", "RateLimit": "limit=5, remaining=4, reset="},
		"draft-6": {"RateLimit-Policy": "5;w=2678400", "RateLimit-Limit": "5", "RateLimit-Remaining": "4"},
		"none":    {"RateLimit-Policy": "", "RateLimit": "", "X-RateLimit-Limit": "5", "X-RateLimit-Remaining": "4"},
	} {
		limiter := &cellhttp.Limiter{Cell: c, StandardHeaders: standard, LegacyHeaders: standard == "none", Prefix: standard + ":"}
		res := get(t, serve(t, limited(t, limiter, fixed("month"))).URL)
		for field, value := range want {
			if got := res.Header.Get(field); !strings.HasPrefix(got, value) || value == "" && got != "" {
				t.Errorf("%s: %s: %q", standard, field, got)
			}
		}
	}
}

func TestRoutesAreCheckedWhereDeclared(t *testing.T) {
	limiter := &cellhttp.Limiter{}
	throttle := cell.Throttle{Key: "p", MaxBurst: 2, Count: 3, Period: time.Minute}
	if _, err := limiter.Limit(cellhttp.Limit{Limiter: throttle}); err != nil {
		t.Fatal(err)
	}
	for name, limits := range map[string][]cellhttp.Limit{
		"no limit":                   nil,
		"a policy by another":        {{Limiter: throttle, By: cellhttp.Header("X-API-Key")}},
		"a policy of other numbers":  {{Limiter: cell.Throttle{Key: "p", MaxBurst: 3, Count: 3, Period: time.Minute}}},
		"a name with a brace":        {{Limiter: cell.Window{Key: "a{b}", Limit: 1, Period: time.Second}}},
		"a lease":                    {{Limiter: cell.Lease{Key: "l", Limit: 1, LeaseTime: time.Second}}},
		"a period under a ms":        {{Limiter: cell.Window{Key: "w", Limit: 1, Period: time.Microsecond}}},
		"buckets that cut no ms":     {{Limiter: cell.Window{Key: "w", Limit: 1, Period: time.Second, Buckets: 7}}},
		"an offset without a grid":   {{Limiter: cell.Fixed{Key: "f", Limit: 1, Period: time.Hour, Offset: 60}}},
		"a policy named twice":       {{Limiter: throttle}, {Limiter: throttle}},
		"a limit of 0":               {{Limiter: cell.Fixed{Key: "f", Limit: 0, Period: time.Hour}}},
		"a header's identity, twice": {{Limiter: cell.Window{Key: "h", Limit: 1, Period: time.Second}, By: cellhttp.Header("A")}, {Limiter: cell.Window{Key: "h2", Limit: 1, Period: time.Second}, By: cellhttp.Header("A")}},
	} {
		_, err := limiter.Limit(limits...)
		if (err == nil) != (name == "a header's identity, twice") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := limiter.Limit(cellhttp.Limit{Limiter: cell.Window{Key: "h", Limit: 1, Period: time.Second}, By: cellhttp.Header("B")}); err == nil {
		t.Error("a policy counted by another header: no error")
	}
	misspelt := &cellhttp.Limiter{StandardHeaders: "draft-8"}
	if _, err := misspelt.Limit(cellhttp.Limit{Limiter: throttle}); err == nil {
		t.Error("StandardHeaders draft-8: no error")
	}
}

// A request whose client went away is neither served nor refused, and nothing is logged.
func TestARequestWhoseClientLeftIsDropped(t *testing.T) {
	server := servertest.Start(t, servertest.Module, nil)
	var logged []string
	limiter := &cellhttp.Limiter{
		Cell: newCell(t, redis.NewClient(&redis.Options{Addr: server.Addr})),
		Log:  func(message string, err error) { logged = append(logged, message) },
	}
	handler := limited(t, limiter, cellhttp.Limit{Limiter: cell.Window{Key: "w", Limit: 5, Period: time.Minute}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx)
	recorder := httptest.NewRecorder()
	handler.ServeHTTP(recorder, req)
	if recorder.Body.Len() != 0 || len(recorder.Header()) != 0 || len(logged) != 0 {
		t.Fatalf("answered %d %q %v; logged %v", recorder.Code, recorder.Body, recorder.Header(), logged)
	}
}
