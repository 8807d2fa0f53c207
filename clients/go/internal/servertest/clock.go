package servertest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// LibFakeTime is Debian's libfaketime.
const LibFakeTime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"

// Clock is a server's clock under libfaketime, read from a file the test rewrites: every
// reading, wall and monotonic, is the instant last set, to the microsecond.
type Clock struct {
	dir, file string
}

// NewClock is a clock standing at unixMicros.
func NewClock(t testing.TB, unixMicros int64) *Clock {
	dir := t.TempDir()
	c := &Clock{dir: dir, file: filepath.Join(dir, "faketime")}
	c.Set(t, unixMicros)
	return c
}

// Set moves the clock to microsecond unixMicros. libfaketime reads the fraction as a double
// and truncates it: half a microsecond more keeps the reading on the microsecond. The file is
// written beside its place and moved there whole.
func (c *Clock) Set(t testing.TB, unixMicros int64) {
	t.Helper()
	at := time.UnixMicro(unixMicros).UTC()
	line := fmt.Sprintf("%s.%06d5\n", at.Format("2006-01-02 15:04:05"), at.Nanosecond()/1000)
	next := c.file + ".next"
	if err := os.WriteFile(next, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, c.file); err != nil {
		t.Fatal(err)
	}
}

func (c *Clock) environment() []string {
	return []string{"LD_PRELOAD=" + LibFakeTime, "FAKETIME_TIMESTAMP_FILE=" + c.file, "FAKETIME_NO_CACHE=1"}
}

var (
	probed   sync.Once
	controls bool
)

// RequireClock skips the test, saying so, where the server under test does not run under
// libfaketime; or, where REDIS_CELL_REQUIRE_CLOCK is set and not empty (scripts/test.sh's
// Valkey run), fails it.
func RequireClock(t *testing.T) {
	t.Helper()
	probed.Do(func() { controls = probe(t) })
	if controls {
		return
	}
	if os.Getenv("REDIS_CELL_REQUIRE_CLOCK") != "" {
		t.Fatalf("REDIS_CELL_REQUIRE_CLOCK is set, and the server under test does not run under libfaketime (%s)", LibFakeTime)
	}
	t.Skip("skipped: the server under test does not run under libfaketime")
}

// probe starts a server under a clock and reads TIME: Debian's Redis never starts under it.
func probe(t *testing.T) bool {
	if _, err := os.Stat(LibFakeTime); err != nil {
		return false
	}
	const at = 1_900_000_000_000_000
	server, err := start(t, Neither, NewClock(t, at))
	if err != nil {
		return false
	}
	reply, ok := server.Do(t, "TIME").([]any)
	return ok && len(reply) == 2 && fmt.Sprint(reply[0]) == strconv.Itoa(at/1_000_000)
}
