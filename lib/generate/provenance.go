package generate

import (
	"strings"

	"github.com/synthpipe/synthpipe/lib/engine"
	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/record"
)

// checkProvenance compares who made the --already records (their gen) with
// this run: each field that differs is named once on stderr, with its
// values and how many records had each, or refused with
// --require-same-params (see "Provenance" in --help).
func checkProvenance(p *record.Provenance, cfg *config, warn func(format string, args ...any)) error {
	run := record.Run{Backend: cfg.Kind.Name, Model: cfg.Model, Params: record.CanonicalParams(engine.ParamsJSON(cfg.Params))}
	diffs := p.Against(run)
	if len(diffs) == 0 {
		return nil
	}
	var names []string
	for _, d := range diffs {
		names = append(names, d.Field)
	}
	what := strings.Join(names, ", ")
	if cfg.sameParams {
		return exitcode.DataErrorf("--%s: the --%s records differ from this run in %s: %s %s; nothing sent (resume with the same settings, or write to another output)",
			flagRequireSameParams, flagAlready, what, diffs[0].Field, diffs[0])
	}
	for _, d := range diffs {
		warn("warning: the --%s records differ from this run in %s: %s (--%s refuses to mix them)", flagAlready, d.Field, d, flagRequireSameParams)
	}
	return nil
}
