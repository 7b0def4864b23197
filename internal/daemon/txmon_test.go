// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/xlb-dev/xlb/internal/api"
)

// lossyCounters is fakeCounters with frames lost after a redirect.
type lossyCounters struct{ fakeCounters }

func (lossyCounters) Stats() (api.Stats, error) {
	return api.Stats{RedirectTxFailed: 5, RedirectErrors: 12}, nil
}

func TestRedirectLossMetrics(t *testing.T) {
	const want = `
# HELP xlb_redirect_errors_total Redirects the kernel refused at once, lost silently (e.g. into a veth whose peer has no XDP program and GRO off, kernel 6.3+).
# TYPE xlb_redirect_errors_total counter
xlb_redirect_errors_total 12
# HELP xlb_redirect_tx_failed_total Redirected frames the target driver refused at the devmap flush, lost silently (e.g. a veth whose peer has no XDP program and GRO off, kernels before 6.3).
# TYPE xlb_redirect_tx_failed_total counter
xlb_redirect_tx_failed_total 5
`
	if err := testutil.CollectAndCompare(newCollector(lossyCounters{}), strings.NewReader(want),
		"xlb_redirect_errors_total", "xlb_redirect_tx_failed_total"); err != nil {
		t.Fatal(err)
	}
}

// TestRedirectCountsWithoutMonitor: a daemon whose monitor could not be
// opened reports zeros, not an error, and stops cleanly.
func TestRedirectCountsWithoutMonitor(t *testing.T) {
	d := &Daemon{log: slog.New(slog.DiscardHandler)}
	st, err := d.withRedirectCounts(api.Stats{Drops: map[string]uint64{"x": 1}})
	if err != nil || st.RedirectTxFailed != 0 || st.RedirectErrors != 0 || st.Drops["x"] != 1 {
		t.Fatalf("got %+v, %v", st, err)
	}
	d.stopRedirectMonitor()
}
