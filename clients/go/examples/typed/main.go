// The typed client over valkey-go, without middleware: each call answers a cell.Reply, its
// waits time.Durations. Run by clients/go/examples_test.go.
package main

import (
	"cmp"
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/valkey-io/valkey-go"

	"rediscell.dev/cell"
	"rediscell.dev/cell/valkeygo"
)

func main() {
	ctx := context.Background()
	client, err := valkey.NewClient(valkey.ClientOption{
		InitAddress: []string{cmp.Or(os.Getenv("REDIS_ADDR"), "localhost:6379")},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	limits := valkeygo.New(client)
	defer limits.Close()

	login, err := limits.Fixed(ctx, "login:alice", 3, time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("login allowed:", login.Allowed(), "remaining:", login.Remaining)

	// A month's quota in 30 cells, asked without taking anything.
	quota, err := limits.Window(ctx, "quota:key42", 10000, 30*24*time.Hour, cell.Buckets(30), cell.DryRun())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("quota remaining:", quota.Remaining)

	// Wait in the server, up to the context's deadline, for the one unit a second to come back.
	if _, err := limits.Throttle(ctx, "jobs", 0, 1, time.Second); err != nil {
		log.Fatal(err)
	}
	deadline, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	job, err := limits.Throttle(deadline, "jobs", 0, 1, time.Second, cell.Block(0))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("job allowed after waiting:", job.Allowed())
}
