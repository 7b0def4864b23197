// SPDX-License-Identifier: Apache-2.0

// Package cfgscale measures how fast the daemon takes configurations of
// many services (`xlb bench apply`), against nft loading the same
// services as DNAT rules in the same lab: a daemon start with N
// services, an apply that adds them all to an empty daemon and one that
// removes them, and a one-service change with N loaded, through the API
// (one real's weight) and as a whole file.
package cfgscale

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/lab/topo"
)

// Options say what to measure.
type Options struct {
	// Services are the service counts, one row each (default 1000, 10000).
	Services []int
	// RealsPerService is each service's reals (the lab's, default 3).
	RealsPerService int
	// Trials of each measure (default 3); the one-service changes are
	// Diffs calls a trial (default 20).
	Trials, Diffs int
	// Self is the xlb binary, Lab the topology to bring up.
	Self string
	Lab  topo.Topology
	// NoNft leaves the nft baseline out.
	NoNft bool
}

// Row is what was measured for one service count, in milliseconds per
// trial (per call for the diffs).
type Row struct {
	Services int `json:"services"`
	Reals    int `json:"reals"`
	// Start is a daemon start with the services to its API answering.
	Start []float64 `json:"start_ms"`
	// Add applies the services to a daemon without any; Remove applies
	// an empty file over them.
	Add    []float64 `json:"add_ms"`
	Remove []float64 `json:"remove_ms"`
	// Diff sets one real's weight through the API with the services
	// loaded; FileDiff applies the whole file with that one change.
	Diff     []float64 `json:"diff_ms"`
	FileDiff []float64 `json:"file_diff_ms"`
	// NftLoad loads the services as nft DNAT rules (`nft -f`),
	// NftFlush deletes the table, NftDiff adds one rule (`nft add rule`).
	NftLoad  []float64 `json:"nft_load_ms,omitempty"`
	NftFlush []float64 `json:"nft_flush_ms,omitempty"`
	NftDiff  []float64 `json:"nft_diff_ms,omitempty"`
}

// Table is the scenario's result.
type Table struct {
	RealsPerService int    `json:"reals_per_service"`
	NftVersion      string `json:"nft_version,omitempty"`
	Rows            []Row  `json:"rows"`
}

// Measure brings the lab up, measures each service count and removes the
// lab; progress gets a line per step.
func Measure(ctx context.Context, o Options, progress func(string)) (*Table, error) {
	o = withDefaults(o)
	if err := o.Lab.Up(); err != nil {
		return nil, err
	}
	defer o.Lab.Down()
	defer o.Lab.RemoveDaemonFiles()
	t := &Table{RealsPerService: o.RealsPerService}
	if !o.NoNft {
		out, err := exec.Command("nft", "--version").Output()
		if err != nil {
			return nil, fmt.Errorf("nft, the baseline: %w", err)
		}
		t.NftVersion = strings.TrimSpace(string(out))
	}
	for _, n := range o.Services {
		row, err := measureRow(ctx, o, n, progress)
		if err != nil {
			return t, fmt.Errorf("%d services: %w", n, err)
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

func withDefaults(o Options) Options {
	if len(o.Services) == 0 {
		o.Services = []int{1000, 10000}
	}
	if o.RealsPerService == 0 {
		o.RealsPerService = min(3, o.Lab.Reals)
	}
	if o.Trials == 0 {
		o.Trials = 3
	}
	if o.Diffs == 0 {
		o.Diffs = 20
	}
	return o
}

func measureRow(ctx context.Context, o Options, n int, progress func(string)) (Row, error) {
	row := Row{Services: n, Reals: n * o.RealsPerService}
	full, empty := config(o, n, n, -1), config(o, n, 0, -1)
	for trial := range o.Trials {
		progress(fmt.Sprintf("%d services: trial %d of %d", n, trial+1, o.Trials))
		if err := o.Lab.WriteConfig(full); err != nil {
			return row, err
		}
		start := time.Now()
		d, err := o.Lab.StartDaemon(ctx, o.Self)
		if err != nil {
			return row, err
		}
		row.Start = append(row.Start, ms(time.Since(start)))
		err = measureApplies(ctx, o, d.Client(), n, full, empty, &row)
		if serr := d.Stop(); err == nil && serr != nil {
			err = fmt.Errorf("stop the daemon: %w", serr)
		}
		if err != nil {
			return row, err
		}
	}
	if !o.NoNft {
		progress(fmt.Sprintf("%d services: nft", n))
		if err := measureNft(o, n, &row); err != nil {
			return row, err
		}
	}
	return row, nil
}

// measureApplies times, on a daemon started with the n services of full:
// the one-service changes, then removing them all and adding them back.
func measureApplies(ctx context.Context, o Options, c *api.Client, n int, full, empty string, row *Row) error {
	if got, err := c.Services(ctx); err != nil || len(got) != n {
		return fmt.Errorf("the daemon started with %d services (%v), want %d", len(got), err, n)
	}
	vip := o.Lab.VIP().String()
	path := api.ServicePath("tcp", vip, int(servicePort(n/2))) + fmt.Sprintf("/reals/%s/%d", o.Lab.RealAddr(1), topo.ServicePort)
	for i := range o.Diffs {
		start := time.Now()
		if _, err := c.Change(ctx, http.MethodPut, path, api.Weight(2+i%2)); err != nil {
			return fmt.Errorf("set one real's weight: %w", err)
		}
		row.Diff = append(row.Diff, ms(time.Since(start)))
	}
	for i := range min(o.Diffs, 5) {
		doc := full
		if i%2 == 0 {
			doc = config(o, n, n, n/2)
		}
		d, err := timeApply(ctx, c, doc, 1)
		if err != nil {
			return err
		}
		row.FileDiff = append(row.FileDiff, d)
	}
	d, err := timeApply(ctx, c, empty, n)
	if err != nil {
		return err
	}
	row.Remove = append(row.Remove, d)
	if d, err = timeApply(ctx, c, full, n); err != nil {
		return err
	}
	row.Add = append(row.Add, d)
	return nil
}

// timeApply applies doc and returns how long it took; it fails unless
// the apply made changes (want of them at least).
func timeApply(ctx context.Context, c *api.Client, doc string, want int) (float64, error) {
	start := time.Now()
	res, err := c.Apply(ctx, []byte(doc))
	took := ms(time.Since(start))
	if err != nil {
		return 0, fmt.Errorf("apply: %w", err)
	}
	if len(res.Changes) < want {
		return 0, fmt.Errorf("apply made %d changes, want %d or more", len(res.Changes), want)
	}
	return took, nil
}

// config is a daemon configuration of n TCP services on the lab's VIP,
// ports 1000 and up, each over the first RealsPerService reals; the
// service numbered heavier gives its first real weight 2. The capacities
// are the least powers of two that hold a row of size services (every
// file of a row has them: they hold while the daemon runs), the
// connection tables small (this measures configuration, not forwarding).
func config(o Options, size, n, heavier int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "interfaces: [%s]\nconn_table: {ipv4: 65536, ipv6: 16384}\n", strings.Join(o.Lab.LBInterfaces(), ", "))
	fmt.Fprintf(&b, "max_services: %d\nmax_reals: %d\n", capacity(size, 1024), capacity(size*o.RealsPerService, 16384))
	if n == 0 {
		b.WriteString("services: []\n")
		return b.String()
	}
	b.WriteString("services:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {vip: %s, port: %d, protocol: tcp, scheduler: wrr, local_ips: [%s], reals: [",
			o.Lab.VIP(), servicePort(i), o.Lab.LocalIP())
		for r := range o.RealsPerService {
			w := 1
			if i == heavier && r == 0 {
				w = 2
			}
			if r > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "{address: %s, port: %d, weight: %d}", o.Lab.RealAddr(r+1), topo.ServicePort, w)
		}
		b.WriteString("]}\n")
	}
	return b.String()
}

func servicePort(i int) uint16 { return uint16(1000 + i) }

// capacity is the least power of two at or above n, and at least def.
func capacity(n, def int) int {
	c := def
	for c < n {
		c *= 2
	}
	return c
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// measureNft times nft with the same services as DNAT rules in the
// balancer's namespace: loading them, adding one rule, deleting them.
func measureNft(o Options, n int, row *Row) error {
	f, err := os.CreateTemp("", "xlb-bench-nft-*.nft")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	var b bytes.Buffer
	fmt.Fprintf(&b, "table ip xlbbench {\n  chain pre {\n    type nat hook prerouting priority dstnat; policy accept;\n")
	reals := make([]string, o.RealsPerService)
	for r := range reals {
		reals[r] = fmt.Sprintf("%d : %s", r, o.Lab.RealAddr(r+1))
	}
	for i := range n {
		fmt.Fprintf(&b, "    ip daddr %s tcp dport %d dnat to numgen inc mod %d map { %s } : %d\n",
			o.Lab.VIP(), servicePort(i), o.RealsPerService, strings.Join(reals, ", "), topo.ServicePort)
	}
	b.WriteString("  }\n}\n")
	if _, err := f.Write(b.Bytes()); err != nil {
		return err
	}
	f.Close()
	nft := func(args ...string) (float64, error) {
		start := time.Now()
		out, err := o.Lab.Exec(o.Lab.LB(), "nft", args...).CombinedOutput()
		if err != nil {
			return 0, fmt.Errorf("nft %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
		}
		return ms(time.Since(start)), nil
	}
	one := fmt.Sprintf("ip daddr %s tcp dport %d dnat to %s:%d", o.Lab.VIP(), 65000, o.Lab.RealAddr(1), topo.ServicePort)
	for range o.Trials {
		for _, step := range []struct {
			out  *[]float64
			args []string
		}{
			{&row.NftLoad, []string{"-f", f.Name()}},
			{&row.NftDiff, append([]string{"add", "rule", "ip", "xlbbench", "pre"}, strings.Fields(one)...)},
			{&row.NftFlush, []string{"delete", "table", "ip", "xlbbench"}},
		} {
			d, err := nft(step.args...)
			if err != nil {
				return err
			}
			*step.out = append(*step.out, d)
		}
	}
	return nil
}

// Median returns the median of xs (0 for none).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
