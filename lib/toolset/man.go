package toolset

import (
	_ "embed"

	md2man "github.com/cpuguy83/go-md2man/v2/md2man"

	"github.com/synthpipe/synthpipe/lib/cliutil"
)

//go:embed records.7.md
var recordsPage []byte

//go:embed status.7.md
var statusPage []byte

// ManPages renders every man page, keyed by file name (budget-cut.1, ...).
func ManPages() map[string][]byte {
	pages := map[string][]byte{
		"synthpipe-records.7": md2man.Render(recordsPage),
		"synthpipe-status.7":  md2man.Render(statusPage),
	}
	for _, t := range All() {
		pages[t.Name+".1"] = ManPage(t.NewApp())
	}
	return pages
}

// ManPage renders app's section-1 man page (cliutil.ManMarkdown) to roff.
func ManPage(app *cliutil.App) []byte {
	return md2man.Render([]byte(cliutil.ManMarkdown(app)))
}
