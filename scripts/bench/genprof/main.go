// Command genprof is generate with a CPU profile: genprof PROFILE ARGS...
// runs generate ARGS and writes its CPU profile to PROFILE.
package main

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/synthpipe/synthpipe/lib/generate"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: genprof PROFILE [generate's arguments]")
		os.Exit(64)
	}
	f, err := os.Create(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "genprof:", err)
		os.Exit(1)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "genprof:", err)
		os.Exit(1)
	}
	args := append([]string{"generate"}, os.Args[2:]...)
	code := generate.Main(args, os.Stdin, os.Stdout, os.Stderr)
	pprof.StopCPUProfile()
	f.Close()
	os.Exit(code)
}
