// Package celltest is the tests every transport passes, against real servers: each command on
// the module, on the library and on neither, bad input, held calls and a cluster.
package celltest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"rediscell.dev/cell"
	"rediscell.dev/cell/internal/servertest"
)

// Target is what a test connects to.
type Target struct {
	Addrs   []string
	Cluster bool
	// ReadTimeout is the client's read timeout (0: its default).
	ReadTimeout time.Duration
	// User and Password, when not empty, are the ACL user the client logs in as.
	User, Password string
}

// Connect makes a Cell over a client of the transport's own, closed when the test ends.
type Connect func(t *testing.T, target Target) *cell.Cell

// Run runs every test of the suite with connect.
func Run(t *testing.T, connect Connect) {
	for _, with := range []servertest.With{servertest.Module, servertest.Library} {
		t.Run("every command on the "+with.String(), func(t *testing.T) {
			server := servertest.Start(t, with, nil)
			everyCommand(t, connect(t, Target{Addrs: []string{server.Addr}}), server, with)
		})
	}
	t.Run("neither, then the library loaded", func(t *testing.T) { neither(t, connect) })
	t.Run("bad input writes nothing", func(t *testing.T) { badInput(t, connect) })
	t.Run("a hold longer than the read timeout is sent once", func(t *testing.T) { heldOnce(t, connect) })
	t.Run("a user allowed the limiters alone holds calls", func(t *testing.T) { heldUnderAnACL(t, connect) })
	t.Run("a hold ends at the context's deadline with the server's answer", func(t *testing.T) { heldToDeadline(t, connect) })
	t.Run("a cancelled hold takes nothing", func(t *testing.T) { heldCancelled(t, connect) })
	t.Run("closing the Cell ends its held calls", func(t *testing.T) { closedWhileHeld(t, connect) })
	for _, with := range []servertest.With{servertest.Module, servertest.Library} {
		t.Run("a cluster with the "+with.String(), func(t *testing.T) { cluster(t, connect, with) })
	}
}

// must holds a call's value and error, for get to fail the test on the error.
func must[T any](value T, err error) result[T] {
	return result[T]{value, err}
}

type result[T any] struct {
	value T
	err   error
}

func (r result[T]) get(t *testing.T) T {
	t.Helper()
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.value
}

func same(t *testing.T, what string, got, want any) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
}

func everyCommand(t *testing.T, c *cell.Cell, server *servertest.Server, with servertest.With) {
	ctx := context.Background()
	route := must(c.Route(ctx)).get(t)
	same(t, "route", route.String(), with.String())

	// redis-cell's worked example: 30 a minute, bursts of 16.
	same(t, "throttle", must(c.Throttle(ctx, "t", 15, 30, time.Minute)).get(t),
		cell.Reply{Limit: 16, Remaining: 15, RetryAfter: -1, ResetAfter: 2 * time.Second})
	reply := must(c.Throttle(ctx, "t", 15, 30, time.Minute, cell.Quantity(15))).get(t)
	same(t, "throttle's remaining", reply.Remaining, int64(0))
	reply = must(c.Throttle(ctx, "t", 15, 30, time.Minute)).get(t)
	// Milliseconds have passed since the first call: the waits are a little shorter.
	if !reply.Limited || reply.Remaining != 0 || reply.RetryAfter > 2*time.Second || reply.RetryAfter < 1900*time.Millisecond ||
		reply.ResetAfter > 32*time.Second || reply.ResetAfter < 31900*time.Millisecond {
		t.Fatalf("throttle denied: %+v", reply)
	}

	reply = must(c.Fixed(ctx, "f", 3, time.Minute, cell.CountDenied())).get(t)
	same(t, "fixed", [3]any{reply.Limited, reply.Limit, reply.Remaining}, [3]any{false, int64(3), int64(2)})
	if reply.ResetAfter <= 59*time.Second || reply.ResetAfter > time.Minute {
		t.Fatalf("fixed's reset: %v", reply.ResetAfter)
	}
	reply = must(c.FixedCalendar(ctx, "fc", 10, cell.Day, cell.Offset(60))).get(t)
	same(t, "a calendar day's remaining", reply.Remaining, int64(9))

	for range 2 {
		must(c.Window(ctx, "w", 2, time.Minute, cell.Buckets(6))).get(t)
	}
	reply = must(c.Window(ctx, "w", 2, time.Minute, cell.Buckets(6))).get(t)
	if !reply.Limited || reply.RetryAfter <= 0 {
		t.Fatalf("the window's third call: %+v", reply)
	}
	reply = must(c.Window(ctx, "w-exact", 2, time.Minute, cell.DryRun())).get(t)
	same(t, "a dry run's remaining", reply.Remaining, int64(1))
	same(t, "a dry run writes nothing", server.Do(t, "EXISTS", "w-exact"), int64(0))

	same(t, "smooth", must(c.Smooth(ctx, "s", 5, time.Second)).get(t).Limited, false)

	same(t, "a lease", must(c.Lease(ctx, "l", 1, 10*time.Second, "a")).get(t).Limited, false)
	same(t, "a second holder", must(c.Lease(ctx, "l", 1, 10*time.Second, "b")).get(t).Limited, true)
	holders := must(c.Holders(ctx, "l")).get(t)
	if len(holders) != 1 || holders[0].Holder != "a" || holders[0].Left <= 9*time.Second || holders[0].Left > 10*time.Second {
		t.Fatalf("holders: %+v", holders)
	}
	same(t, "released", must(c.Release(ctx, "l", "a")).get(t), true)
	same(t, "released again", must(c.Release(ctx, "l", "a")).get(t), false)

	limiters := []cell.Limiter{
		cell.Throttle{Key: "{u}a", MaxBurst: 1, Count: 1, Period: time.Second},
		cell.Window{Key: "{u}b", Limit: 5, Period: time.Minute},
		cell.Fixed{Key: "{u}c", Limit: 5, Calendar: cell.Month},
		cell.Lease{Key: "{u}d", Limit: 5, LeaseTime: time.Minute},
	}
	same(t, "all", must(c.All(ctx, limiters, cell.Holder("h"))).get(t).Limited, false)
	detail := must(c.AllDetail(ctx, limiters, cell.Holder("h"), cell.DryRun())).get(t)
	if len(detail) != 4 || detail[0].Remaining != 0 || detail[1].Remaining != 3 {
		t.Fatalf("all, in detail: %+v", detail)
	}

	reply = must(c.Throttle(ctx, "am", 2, 1, time.Minute, cell.Quantity(5), cell.AtMost())).get(t)
	same(t, "at most's grant", [2]any{reply.Limited, reply.Granted}, [2]any{false, int64(3)})
	reply = must(c.Throttle(ctx, "am", 2, 1, time.Minute, cell.Quantity(3), cell.Refund())).get(t)
	same(t, "refunded", reply.Remaining, int64(3))

	if with == servertest.Library {
		var needs *cell.NeedsModuleError
		if _, err := c.Top(ctx); !errors.As(err, &needs) {
			t.Fatalf("CL.TOP on the library: %v", err)
		}
		if _, err := c.Ban(ctx, "t", time.Minute); !errors.As(err, &needs) {
			t.Fatalf("CL.BAN on the library: %v", err)
		}
		return
	}
	top := must(c.Top(ctx, cell.Count(1))).get(t)
	if len(top) != 1 || top[0].Denied < 1 {
		t.Fatalf("top: %+v", top)
	}
	end := must(c.Ban(ctx, "t", time.Minute)).get(t)
	if until := time.Until(end); until < 50*time.Second || until > 70*time.Second {
		t.Fatalf("the ban's end: %v", end)
	}
	same(t, "banned", must(c.Throttle(ctx, "t", 15, 30, time.Minute)).get(t).Limited, true)
	same(t, "unbanned", must(c.Unban(ctx, "t")).get(t), true)
}

func neither(t *testing.T, connect Connect) {
	ctx := context.Background()
	server := servertest.Start(t, servertest.Neither, nil)
	c := connect(t, Target{Addrs: []string{server.Addr}})
	var missing *cell.ModuleMissingError
	if _, err := c.Throttle(ctx, "k", 1, 1, time.Second); !errors.As(err, &missing) || !strings.Contains(err.Error(), "MODULE LOAD") {
		t.Fatalf("on neither: %v", err)
	}
	server.Do(t, "FUNCTION", "LOAD", servertest.LibrarySource(t))
	same(t, "once loaded", must(c.Throttle(ctx, "k", 1, 1, time.Second)).get(t).Remaining, int64(1))
	same(t, "the route", must(c.Route(ctx)).get(t), cell.Library)
	// The library flushed: the call is sent again on the route found then, and says so.
	server.Do(t, "FUNCTION", "FLUSH")
	if _, err := c.Throttle(ctx, "k", 1, 1, time.Second); !errors.As(err, &missing) {
		t.Fatalf("flushed: %v", err)
	}
}

func badInput(t *testing.T, connect Connect) {
	ctx := context.Background()
	for _, with := range []servertest.With{servertest.Module, servertest.Library} {
		server := servertest.Start(t, with, nil)
		c := connect(t, Target{Addrs: []string{server.Addr}})
		calls := map[string]func() error{
			"a negative burst": func() error {
				_, err := c.Throttle(ctx, "bad", -1, 1, time.Second)
				return err
			},
			"a period of no whole milliseconds": func() error {
				_, err := c.Fixed(ctx, "bad", 1, 1500*time.Microsecond)
				return err
			},
			"a window of no buckets": func() error {
				_, err := c.Window(ctx, "bad", 1, time.Second, cell.Buckets(0))
				return err
			},
			"an option the command does not take": func() error {
				_, err := c.Smooth(ctx, "bad", 1, time.Second, cell.CountDenied())
				return err
			},
			"a negative hold": func() error {
				_, err := c.Throttle(ctx, "bad", 1, 1, time.Second, cell.Block(-time.Second))
				return err
			},
			"no limiters": func() error {
				_, err := c.All(ctx, nil)
				return err
			},
			"a lease of no time": func() error {
				_, err := c.Lease(ctx, "bad", 1, 0, "h")
				return err
			},
		}
		for name, call := range calls {
			if err := call(); err == nil {
				t.Fatalf("%s on the %s: no error", name, with)
			}
		}
		same(t, "keys written on the "+with.String(), server.Do(t, "DBSIZE"), int64(0))
	}
}

// heldOnce: a call held past the client's read timeout is answered, and sent once (a client
// that sent it again would have cut the first send, whose waiter then takes nothing: only the
// module's count of waiters tells, as a server may not count a call whose client left).
func heldOnce(t *testing.T, connect Connect) {
	ctx := context.Background()
	server := servertest.Start(t, servertest.Module, nil)
	c := connect(t, Target{Addrs: []string{server.Addr}, ReadTimeout: 500 * time.Millisecond})
	must(c.Fixed(ctx, "h", 2, 1500*time.Millisecond, cell.Quantity(2))).get(t)
	server.Do(t, "CONFIG", "RESETSTAT")
	reply := must(c.Fixed(ctx, "h", 2, 1500*time.Millisecond, cell.Block(10*time.Second))).get(t)
	same(t, "admitted after waiting", reply.Limited, false)
	same(t, "its remaining", reply.Remaining, int64(1))
	waiting := server.Waiting(t)
	same(t, "calls that waited", waiting["waited"], int64(1))
	same(t, "waiters that left", waiting["left"], int64(0))
}

// closedWhileHeld: closing the Cell cuts its held calls, which return an error, and their
// waiters leave the server.
func closedWhileHeld(t *testing.T, connect Connect) {
	server := servertest.Start(t, servertest.Module, nil)
	c := connect(t, Target{Addrs: []string{server.Addr}})
	must(c.Fixed(context.Background(), "closed", 1, time.Minute)).get(t)
	returned := make(chan error, 1)
	go func() {
		_, err := c.Fixed(context.Background(), "closed", 1, time.Minute, cell.Block(0))
		returned <- err
	}()
	if !servertest.Poll(80, func() bool { return server.Waiting(t)["now"] == 1 }) {
		t.Fatal("the call never began to wait")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-returned:
		if err == nil {
			t.Fatal("a cut call returned no error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the held call outlived its Cell by 5 s")
	}
	if !servertest.Poll(80, func() bool { return server.Waiting(t)["left"] == 1 }) {
		t.Fatalf("the waiter did not leave: %v", server.Waiting(t))
	}
}

// heldUnderAnACL: a user allowed the limiters and nothing else (no CLIENT, no COMMAND) holds
// calls, has them answered at the deadline, and cancels them.
func heldUnderAnACL(t *testing.T, connect Connect) {
	server := servertest.Start(t, servertest.Module, nil)
	server.Do(t, "ACL", "SETUSER", "default", "on", "nopass", "~*", "&*", "+@all")
	server.Do(t, "ACL", "SETUSER", "app", "on", ">sesame", "~*", "resetchannels", "-@all", "+cl.fixed", "+hello", "+ping", "+auth")
	c := connect(t, Target{Addrs: []string{server.Addr}, User: "app", Password: "sesame"})
	must(c.Fixed(context.Background(), "acl", 1, time.Minute)).get(t)
	deadline, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	same(t, "denied at the deadline", must(c.Fixed(deadline, "acl", 1, time.Minute, cell.Block(0))).get(t).Limited, true)
	cancelled, stop := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, stop)
	if _, err := c.Fixed(cancelled, "acl", 1, time.Minute, cell.Block(0)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func heldToDeadline(t *testing.T, connect Connect) {
	server := servertest.Start(t, servertest.Module, nil)
	c := connect(t, Target{Addrs: []string{server.Addr}})
	must(c.Fixed(context.Background(), "d", 1, time.Minute)).get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	began := time.Now()
	reply := must(c.Fixed(ctx, "d", 1, time.Minute, cell.Block(0))).get(t)
	same(t, "denied at the deadline", reply.Limited, true)
	if waited := time.Since(began); waited < 300*time.Millisecond {
		t.Fatalf("answered after %v, before the deadline", waited)
	}
}

// heldCancelled: a held call whose context is cancelled returns the context's error, and
// takes nothing when its window opens again.
func heldCancelled(t *testing.T, connect Connect) {
	server := servertest.Start(t, servertest.Module, nil)
	c := connect(t, Target{Addrs: []string{server.Addr}})
	must(c.Fixed(context.Background(), "x", 1, time.Second)).get(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	if reply, err := c.Fixed(ctx, "x", 1, time.Second, cell.Block(10*time.Second)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v %+v", err, reply)
	}
	// Past the window's end, where the held call would have been admitted.
	time.Sleep(1200 * time.Millisecond)
	peek := must(c.Fixed(context.Background(), "x", 1, time.Second, cell.Quantity(0))).get(t)
	same(t, "nothing taken", peek.Remaining, int64(1))
}

func cluster(t *testing.T, connect Connect, with servertest.With) {
	ctx := context.Background()
	nodes := servertest.Cluster(t, with)
	c := connect(t, Target{Addrs: servertest.Addrs(nodes), Cluster: true, ReadTimeout: 500 * time.Millisecond})
	// Keys on every node, each on the node that holds its slot.
	for _, key := range []string{"a", "b", "c", "d", "e", "f"} {
		same(t, "on "+key, must(c.Throttle(ctx, key, 1, 1, time.Minute)).get(t).Remaining, int64(1))
	}
	for _, node := range nodes {
		if size := node.Do(t, "DBSIZE").(int64); size == 0 {
			t.Fatalf("%v holds no key of six", node)
		}
	}
	limiters := []cell.Limiter{
		cell.Throttle{Key: "{u}a", MaxBurst: 1, Count: 1, Period: time.Second},
		cell.Window{Key: "{u}b", Limit: 5, Period: time.Minute},
	}
	same(t, "all on one slot", must(c.All(ctx, limiters)).get(t).Limited, false)
	if _, err := c.All(ctx, []cell.Limiter{
		cell.Window{Key: "a", Limit: 5, Period: time.Minute},
		cell.Window{Key: "b", Limit: 5, Period: time.Minute},
	}); err == nil {
		t.Fatal("all across slots: no error")
	}
	if with == servertest.Library {
		return
	}
	// A held call, on the node of its key, past the read timeout.
	for _, key := range []string{"h1", "h2", "h3"} {
		must(c.Fixed(ctx, key, 1, time.Second)).get(t)
		reply := must(c.Fixed(ctx, key, 1, time.Second, cell.Block(5*time.Second))).get(t)
		same(t, "held on the cluster", reply.Limited, false)
	}
	redirected(t, c, nodes)
}

// redirected: a held call whose slot has moved since the client last looked follows MOVED to
// its new node, and one whose slot is being migrated follows ASK to the importing node; each
// waits there and is admitted, sent once.
func redirected(t *testing.T, c *cell.Cell, nodes []*servertest.Server) {
	ctx := context.Background()
	for _, moved := range []bool{true, false} {
		key := map[bool]string{true: "moved", false: "asked"}[moved]
		slot := nodes[0].Do(t, "CLUSTER", "KEYSLOT", key).(int64)
		var from, to *servertest.Server
		for _, node := range nodes {
			owner := false
			for _, each := range node.Do(t, "CLUSTER", "SLOTS").([]any) {
				if r := each.([]any); r[0].(int64) <= slot && slot <= r[1].(int64) {
					owner = fmt.Sprint(r[2].([]any)[1]) == strconv.Itoa(node.Port)
				}
			}
			if owner {
				from = node
			}
		}
		for _, node := range nodes {
			if node != from {
				to = node
				break
			}
		}
		toID, fromID := to.Do(t, "CLUSTER", "MYID"), from.Do(t, "CLUSTER", "MYID")
		if moved {
			for _, node := range nodes {
				node.Do(t, "CLUSTER", "SETSLOT", slot, "NODE", toID)
			}
		} else {
			to.Do(t, "CLUSTER", "SETSLOT", slot, "IMPORTING", fromID)
			from.Do(t, "CLUSTER", "SETSLOT", slot, "MIGRATING", toID)
		}
		// The limit, full on the node the call is sent on to.
		pipe := to.Client.Pipeline()
		if !moved {
			pipe.Do(ctx, "ASKING")
		}
		pipe.Do(ctx, "CL.FIXED", key, 1, 1000, "MS")
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		to.Do(t, "CONFIG", "RESETSTAT")
		from.Do(t, "CONFIG", "RESETSTAT")
		if !moved {
			// The waiter's unit fits after a second; the import completes a little later, and
			// only then is the waiter admitted on its new node.
			done := make(chan struct{})
			time.AfterFunc(1500*time.Millisecond, func() {
				defer close(done)
				for _, node := range nodes {
					node.Client.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", toID)
				}
			})
			defer func() { <-done }()
		}
		reply, err := c.Fixed(ctx, key, 1, time.Second, cell.Block(5*time.Second))
		if err != nil || reply.Limited {
			t.Fatalf("held, %s: %+v %v", key, reply, err)
		}
		same(t, key+": calls that waited on the node it went to", to.Waiting(t)["waited"], int64(1))
		// The client's map still named the old node: the redirect was followed, not avoided.
		same(t, key+": CL.FIXED calls the old node redirected", from.CommandStat(t, "cl.fixed", "rejected_calls"), int64(1))
	}
}

// ThroughASentinel: a Cell over a client that finds primary through a sentinel sends its
// calls, and its held calls, there.
func ThroughASentinel(t *testing.T, c *cell.Cell, primary *servertest.Server) {
	ctx := context.Background()
	must(c.Fixed(ctx, "f", 1, time.Second)).get(t)
	reply := must(c.Fixed(ctx, "f", 1, time.Second, cell.Block(5*time.Second))).get(t)
	same(t, "held through the sentinel", reply.Limited, false)
	same(t, "on the primary", primary.Do(t, "EXISTS", "f"), int64(1))
}
