// sleeper is a test stand-in: it prints a line, answers "health" as an exec
// command with exit 0 ("fail" with exit 1), exits with $EXIT_CODE after $EXIT_AFTER if set, and
// otherwise waits for SIGTERM.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "health":
			os.Exit(0)
		case "fail": // a healthcheck that never passes
			os.Exit(1)
		case "echo":
			fmt.Println(os.Args[2:])
			os.Exit(0)
		case "env":
			fmt.Println(os.Getenv(os.Args[2]))
			os.Exit(0)
		}
	}
	// Catch SIGTERM before saying "up": as PID 1 the sleeper would ignore
	// it until then, and a stop right after start would end in SIGKILL.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	fmt.Println("sleeper up")
	if d, err := time.ParseDuration(os.Getenv("EXIT_AFTER")); err == nil {
		code, _ := strconv.Atoi(os.Getenv("EXIT_CODE"))
		select {
		case <-time.After(d):
			fmt.Println("sleeper exiting with", code)
			os.Exit(code)
		case <-sig:
		}
		return
	}
	<-sig
	fmt.Println("sleeper got SIGTERM")
}
