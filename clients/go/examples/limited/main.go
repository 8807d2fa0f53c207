// A net/http app whose one route allows each client address 3 at once and 3 a minute (GCRA),
// decided by the module in one CL.ALL call: the app docs/clients.md shows, served by
// clients/go/examples_test.go.
package main

import (
	"cmp"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"rediscell.dev/cell"
	"rediscell.dev/cell/cellhttp"
	"rediscell.dev/cell/goredis"
)

func main() {
	rdb := redis.NewClient(&redis.Options{Addr: cmp.Or(os.Getenv("REDIS_ADDR"), "localhost:6379")})
	limits := &cellhttp.Limiter{Cell: goredis.New(rdb)}
	perAddress, err := limits.Limit(cellhttp.Limit{
		Limiter: cell.Throttle{Key: "per-address", MaxBurst: 2, Count: 3, Period: time.Minute},
	})
	if err != nil {
		log.Fatal(err)
	}
	http.Handle("/", perAddress(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})))
	listener, err := net.Listen("tcp", cmp.Or(os.Getenv("ADDR"), "127.0.0.1:8080"))
	if err != nil {
		log.Fatal(err)
	}
	log.Println("listening on", listener.Addr())
	log.Fatal(http.Serve(listener, nil))
}
