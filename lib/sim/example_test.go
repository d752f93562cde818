package sim_test

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/synthpipe/synthpipe/lib/sim"
)

// A test starts the simulator on a loopback port, sends a prompt and checks
// the answer is the one the simulator generates for that prompt.
func Example() {
	cfg := sim.Default()
	cfg.Lengths = sim.LengthDist{Kind: sim.LengthFixed, Fixed: 5}
	srv, err := sim.New(cfg)
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	url, err := srv.Start("127.0.0.1:0")
	if err != nil {
		panic(err)
	}

	resp, err := http.Post(url+"/generate", "application/json",
		strings.NewReader(`{"input_ids": [1, 2, 3], "sampling_params": {"max_new_tokens": 16}}`))
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()

	var ids []int
	for _, v := range gjson.GetBytes(body, "output_ids").Array() {
		ids = append(ids, int(v.Int()))
	}
	want := append(sim.ExpectedOutputIDs([]int{1, 2, 3}, 5), cfg.EOSTokenID)
	fmt.Println(gjson.GetBytes(body, "meta_info.finish_reason").Raw)
	fmt.Println(slices.Equal(ids, want), srv.Stats().Completed)
	// Output:
	// {"type":"stop","matched":2}
	// true 1
}
