package chattemplate

import (
	"sync"
	"testing"
)

// TestConcurrentRender shares one Template between goroutines, as a worker
// pool does; run with -race to check that rendering never writes to it.
func TestConcurrentRender(t *testing.T) {
	cf, want := loadConformance(t)
	cases := map[string]conformanceCase{}
	for _, c := range cf.Cases {
		cases[c.Name] = c
	}
	templates := map[string]*Template{}
	for _, w := range want {
		if templates[w.Template] == nil {
			templates[w.Template] = loadTemplate(t, w.Template)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan string, len(want)*4)
	for worker := 0; worker < 4; worker++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, w := range want {
				got, err := templates[w.Template].Render(optionsFor(cf, w.Template, cases[w.Case]))
				if w.OK && (err != nil || got != w.Output) {
					errs <- w.Template + "/" + w.Case
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("concurrent render differs: %s", e)
	}
}
