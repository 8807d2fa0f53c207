package cell_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"rediscell.dev/cell/internal/servertest"
)

// The examples docs/clients.md shows whole (clients/python/tests/test_examples.py holds the
// page to the files), each run against a server with the module.

func run(t *testing.T, example string, addr string) string {
	t.Helper()
	// No version control stamped in: the checkout may be one git will not read.
	cmd := exec.Command("go", "run", "-buildvcs=false", "./examples/"+example)
	cmd.Env = append(os.Environ(), "REDIS_ADDR="+addr)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", example, err, out)
	}
	return string(out)
}

func TestTheDropInExampleAdmitsTenOfTwelve(t *testing.T) {
	server := servertest.Start(t, servertest.Module, nil)
	out := run(t, "ratelimit", server.Addr)
	if !strings.HasSuffix(out, "admitted 10 of 12\n") || strings.Count(out, "denied; retry after") != 2 {
		t.Fatalf("%s", out)
	}
}

func TestTheTypedExample(t *testing.T) {
	server := servertest.Start(t, servertest.Module, nil)
	out := run(t, "typed", server.Addr)
	want := "login allowed: true remaining: 2\nquota remaining: 9999\njob allowed after waiting: true\n"
	if out != want {
		t.Fatalf("%q", out)
	}
	if server.Do(t, "EXISTS", "quota:key42").(int64) != 0 {
		t.Fatal("the dry run wrote its key")
	}
}

func TestTheLimitedAppAdmitsThreeThen429(t *testing.T) {
	server := servertest.Start(t, servertest.Module, nil)
	binary := t.TempDir() + "/limited"
	if out, err := exec.Command("go", "build", "-buildvcs=false", "-o", binary, "./examples/limited").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	app := exec.CommandContext(ctx, binary)
	app.Env = append(os.Environ(), "REDIS_ADDR="+server.Addr, "ADDR=127.0.0.1:0")
	logs, err := app.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = app.Process.Kill(); _ = app.Wait() }()
	line, err := bufio.NewReader(logs).ReadString('\n')
	_, addr, found := strings.Cut(strings.TrimSpace(line), "listening on ")
	if err != nil || !found {
		t.Fatalf("the app said %q (%v)", line, err)
	}
	for at, want := range []int{200, 200, 200, 429} {
		res, err := http.Get("http://" + addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		if res.StatusCode != want || res.Header.Get("RateLimit") == "" || want == 429 && res.Header.Get("Retry-After") != "20" {
			t.Fatalf("request %d: %d %v", at+1, res.StatusCode, res.Header)
		}
	}
}
