// Command failer stands in for a Dockerfile step that fails: it prints
// numbered lines and exits 3, so a build shows the step and its last lines.
package main

import (
	"fmt"
	"os"
)

func main() {
	for i := 1; i <= 30; i++ {
		fmt.Printf("failer line %d\n", i)
	}
	fmt.Fprintln(os.Stderr, "failer: giving up")
	os.Exit(3)
}
