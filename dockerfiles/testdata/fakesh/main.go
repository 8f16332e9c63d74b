// Command fakesh stands in for /bin/sh in the base images of the lab's
// Dockerfiles: it prints the command a RUN step would run, with the build's
// ARGs expanded from its environment, and succeeds. A build over it proves
// the Dockerfile parses, scopes its ARGs and labels its image as intended,
// without a registry or the real (multi-GB) bases.
package main

import (
	"fmt"
	"os"
	"strings"
)

func main() {
	fmt.Println("fakesh:", os.ExpandEnv(strings.Join(os.Args[1:], " ")))
}
