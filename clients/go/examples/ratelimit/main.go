// An app that limited with go-redis/redis_rate, switched to the drop-in by its import path
// alone: a burst of 12 calls against 10 a second admits 10. Run by
// clients/go/examples_test.go.
package main

import (
	"cmp"
	"context"
	"fmt"
	"log"
	"os"

	"github.com/redis/go-redis/v9"

	"rediscell.dev/cell/redis_rate" // was "github.com/go-redis/redis_rate/v10"
)

func main() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: cmp.Or(os.Getenv("REDIS_ADDR"), "localhost:6379")})
	limiter := redis_rate.NewLimiter(rdb)
	admitted := 0
	for range 12 {
		res, err := limiter.Allow(ctx, "tenant:42", redis_rate.PerSecond(10))
		if err != nil {
			log.Fatal(err)
		}
		admitted += res.Allowed
		if res.Allowed == 0 {
			fmt.Println("denied; retry after", res.RetryAfter)
		}
	}
	fmt.Println("admitted", admitted, "of 12")
}
