package jsonl

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/iostreams"
)

// Files lists every file a tool reads and writes, so that Check can refuse
// an output that is also an input before anything is opened for writing: the
// shell makes that easy ("tool --errors e.jsonl < e.jsonl", "tool f > f",
// "-o out.jsonl --append < out.jsonl") and each loses data, by emptying a
// file before it is read or by reading back the tool's own output. Files are
// compared by identity (device and inode), whatever names or links lead to
// them. Only regular files can clash: /dev/null, terminals and pipes may be
// named twice.
type Files struct {
	ends       []end
	stdinReads []string // what reads stdin: it can be read once
}

// end is one file a tool reads or writes.
type end struct {
	name     string // for messages: "stdin", "-o out.jsonl", "input in.jsonl"
	path     string // "" for stdin and stdout
	file     os.FileInfo
	write    bool
	appendTo bool // written by appending: its old contents stay
	state    bool // read whole before anything is written (--already, --done)
}

// Inputs adds the record inputs (names as jsonl.Open takes them: none or "-"
// is stdin).
func (fs *Files) Inputs(stdin io.Reader, names []string) {
	if len(names) == 0 {
		names = []string{"-"}
	}
	for _, n := range names {
		if n == "-" {
			if !slices.Contains(fs.stdinReads, "the input") { // "-" twice reads nothing the second time
				fs.stdinReads = append(fs.stdinReads, "the input")
				fs.stdin(stdin)
			}
			continue
		}
		fs.add(end{name: "the input " + n, path: n})
	}
}

// stdin adds standard input, read.
func (fs *Files) stdin(stdin io.Reader) {
	if f := iostreams.FileOf(stdin); f != nil {
		if fi, err := f.Stat(); err == nil {
			fs.ends = append(fs.ends, end{name: "stdin", file: fi})
		}
	}
}

// State adds files a flag names that are read whole before anything is
// written (--already, --done): one of them may be an output that is appended
// to, the resume of an earlier run.
func (fs *Files) State(flag string, names []string) {
	for _, n := range names {
		if n == "-" {
			fs.stdinReads = append(fs.stdinReads, flag+" -")
			continue
		}
		fs.add(end{name: flag + " " + n, path: n, state: true})
	}
}

// Stdout adds standard output, written; opened by the shell with >> it is
// appended to.
func (fs *Files) Stdout(stdout io.Writer) {
	if f := iostreams.FileOf(stdout); f != nil {
		if fi, err := f.Stat(); err == nil {
			fs.ends = append(fs.ends, end{name: "stdout", file: fi, write: true, appendTo: appending(f)})
		}
	}
}

// Output adds a file the tool writes, named by flag ("-o", "--errors"):
// truncated, or appended to with appendTo. An empty path adds nothing.
func (fs *Files) Output(flag, path string, appendTo bool) {
	if path != "" {
		fs.add(end{name: flag + " " + path, path: path, write: true, appendTo: appendTo})
	}
}

func (fs *Files) add(e end) {
	if fi, err := os.Stat(e.path); err == nil {
		e.file = fi
	}
	fs.ends = append(fs.ends, e)
}

// appending reports whether f was opened with O_APPEND (the shell's >>).
func appending(f *os.File) bool {
	flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), syscall.F_GETFL, 0)
	return errno == 0 && flags&syscall.O_APPEND != 0
}

// Check refuses, with a usage error (64), two of the files that are one
// regular file where one of them is written: an output that is also an
// input, or two outputs into one file. Reading a --done or --already file
// that is also an output appended to is the normal resume, and passes.
func (fs *Files) Check() error {
	if len(fs.stdinReads) > 1 {
		return exitcode.Usagef("stdin is read by both %s and %s: it can be read once; give one of them a file", fs.stdinReads[0], fs.stdinReads[1])
	}
	for i, a := range fs.ends {
		for _, b := range fs.ends[i+1:] {
			if !a.write && !b.write || !same(a, b) {
				continue
			}
			w, r := a, b
			if !w.write {
				w, r = b, a
			}
			switch {
			case r.write:
				return exitcode.Usagef("%s and %s are the same file: the two outputs would be mixed in it; give each its own file", w.name, r.name)
			case r.state && w.appendTo:
				continue
			case w.appendTo:
				return exitcode.Usagef("%s is also %s: the run would read back its own output; write to another file", w.name, r.name)
			case w.path == "": // stdout, which the shell has already emptied
				return exitcode.Usagef("stdout is also %s, which the shell emptied before it could be read (> on a file the command reads): write to another file, then rename it", r.name)
			default:
				return exitcode.Usagef("%s is also %s: it would be emptied before it is read; write to another file, then rename it", w.name, r.name)
			}
		}
	}
	return nil
}

// same reports whether two ends are one regular file: the same device and
// inode, or, for outputs that do not exist yet, the same path.
func same(a, b end) bool {
	if a.file != nil && b.file != nil {
		return a.file.Mode().IsRegular() && os.SameFile(a.file, b.file)
	}
	if a.file == nil && b.file == nil && a.path != "" && b.path != "" {
		pa, erra := filepath.Abs(a.path)
		pb, errb := filepath.Abs(b.path)
		return erra == nil && errb == nil && pa == pb
	}
	return false
}

// SameFileIn reports whether path is one of paths, by name or as the same
// file under another name (so that a file is not counted twice).
func SameFileIn(path string, paths []string) bool {
	fi, err := os.Stat(path)
	for _, p := range paths {
		if p == path {
			return true
		}
		if err == nil {
			if pi, perr := os.Stat(p); perr == nil && os.SameFile(fi, pi) {
				return true
			}
		}
	}
	return false
}
