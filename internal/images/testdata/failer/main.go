// Command failer stands in for a Dockerfile step that fails: it prints
// numbered lines and exits 3, so a build shows the step and its last lines.
package main

import (
	"fmt"
	"os"
	"time"
)

func main() {
	for i := 1; i <= 30; i++ {
		fmt.Printf("failer line %d\n", i)
	}
	// stdout and stderr reach the build output through separate copies; a
	// pause keeps the stderr line last, where the test looks for it.
	time.Sleep(300 * time.Millisecond)
	fmt.Fprintln(os.Stderr, "failer: giving up")
	os.Exit(3)
}
