package ratetest

import (
	"os/exec"
	"strings"
	"testing"
)

// TestAPIIsRedisRates: apidiff (golang.org/x/exp, a tool of this module) finds no change from
// redis_rate v10.0.1's exported API to the drop-in's that would break a caller.
func TestAPIIsRedisRates(t *testing.T) {
	out, err := exec.Command("go", "tool", "apidiff", "-incompatible",
		"github.com/go-redis/redis_rate/v10", "rediscell.dev/cell/redis_rate").CombinedOutput()
	if err != nil {
		t.Fatalf("apidiff: %v: %s", err, out)
	}
	if report := strings.TrimSpace(string(out)); report != "" {
		t.Fatalf("incompatible with redis_rate v10.0.1:\n%s", report)
	}
}
