// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/xlb-dev/xlb/internal/lab/bench"
	"github.com/xlb-dev/xlb/internal/lab/bench/apps"
	benchrun "github.com/xlb-dev/xlb/internal/lab/bench/run"
	"github.com/xlb-dev/xlb/internal/lab/bench/traffic"
)

func newBenchCmd(g *globalFlags) *cobra.Command {
	var (
		o     bench.Options
		out   string
		quiet bool
		quick bool
		l4    string
		sizes []string
	)
	cmd := &cobra.Command{
		Use:   "bench SCENARIO",
		Short: "Measure xlb and the baselines side by side in a lab: " + strings.Join(benchrun.Scenarios, ", "),
		Long: `Builds a lab (client, lb, reals), and for each DUT in turn sets it up in
the lb namespace, runs the scenario's trials with the XDP generator in the
client and XDP sinks on the reals, and tears it down. Results go to a
directory: results.json, results.csv, report.md and charts (SVG, PNG).

Scenarios:
  pps          maximum forwarding rate, 64 B UDP, flows 1, 1k, 1M
  frame-sizes  rate and loss per frame size at a fixed rate and at maximum
  rfc2544      NDR and PDR binary search per frame size
  multiflow    VSPERF multi-flow matrix: NDR per L2/L3/L4 src/dst/both x flows
  apply        configuration at scale: daemon start, add and remove all,
               one-service changes with --services (1000, 10000)
               services loaded, against nft loading them as DNAT rules
  datapath     per-packet cost through BPF_PROG_RUN vs bare XDP_TX, per
               connection-table size (--flows; default 1k..10M, 2.2 GB)
  cluster      a cluster of --nodes (1,2,3) xlb nodes behind an FRR router
               (ECMP, BGP, connection sync): --streams (150) concurrent
               streams and new connections through the VIP, the spread
               over the nodes

all runs every scenario in turn, each with its defaults (hours), into
--out/SCENARIO, and writes --out/index.md linking their reports with the
machine, the commit and what each took; --quick makes it a pass of a
few minutes that checks every table is produced.

Connection scenarios (XDP TCP endpoints and real applications, DUTs xlb,
nft, haproxy, direct; xdp-fwd with the XDP endpoints):
  cps          highest new-connection rate with no connection error,
               verified twice, per core count (--cores), in the DPVS
               report's shape: 8 reals, xlb with 50 local IPs and rr,
               1-byte payloads, against nft and xdp-fwd
  cc           hold --conns keepalive connections, a request each per
               --keepalive; the DUT's memory for them
  throughput   --payload-size (800) requests back to back on 128
               keepalive connections; iperf3 single stream, MTU 1500, 9000
  latency      one request at a time on one connection (XDP TCP_RR);
               kernel TCP_RR, TCP_CRR and sockperf ping-pong
  redis        redis-benchmark, default and -d 1400 -P 50
  http         wrk against nginx
  synflood     spoofed SYNs from 65,536 sources: alone at the generator's
               rate, then with legitimate connections at --open-rate
               (20000/s), without a flood, with one at half what the DUT
               answered alone and at the generator's rate; DUTs xlb,
               xlb-synproxy (syn_proxy: true) and nft-synproxy (the
               kernel's); cps also takes xlb-toa and xlb-proxy-v2`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("which scenario? want all or one of %s", strings.Join(benchrun.Scenarios, ", "))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			scenario := args[0]
			for _, s := range sizes {
				n, err := traffic.ParseSize(s)
				if err != nil {
					return usageError{err}
				}
				o.Sizes = append(o.Sizes, n)
			}
			if quick && scenario != "all" {
				return usageError{fmt.Errorf("--quick: only with all")}
			}
			o.L4 = traffic.L4(l4)
			self, err := os.Executable()
			if err != nil {
				return fmt.Errorf("find the xlb binary: %w", err)
			}
			o.Self = self
			if !quiet {
				o.Progress, o.JSONProgress = cmd.ErrOrStderr(), g.json
			}
			if out == "" {
				out = filepath.Join("results", fmt.Sprintf("%s-%s", scenario, time.Now().Format("20060102-150405")))
			}
			if scenario == "all" {
				return benchAll(cmd, g, o, out, quick, quiet)
			}
			res, err := benchrun.Run(cmd.Context(), scenario, o)
			var oe *benchrun.OptionError
			if errors.As(err, &oe) {
				return usageError{err}
			}
			if err != nil {
				return err
			}
			res.Command = "xlb " + strings.Join(os.Args[1:], " ")
			if err := res.Write(out); err != nil {
				return err
			}
			if err := res.Check(); err != nil {
				return fmt.Errorf("results in %s are not consistent: %w", out, err)
			}
			if g.json {
				return printJSON(cmd, map[string]string{"results": out})
			}
			if !quiet {
				report, _ := os.ReadFile(filepath.Join(out, "report.md"))
				fmt.Fprintf(cmd.OutOrStdout(), "%s\nresults in %s\n", report, out)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.DUTs, "dut", nil, "devices under test, in order (default: "+strings.Join(bench.DUTNames, ",")+"; cc xlb,nft,direct, latency and throughput xlb,xdp-fwd,nft,direct, redis xlb,xdp-fwd,direct, http xlb,xdp-fwd,nft,haproxy,direct, cps xlb,nft,xdp-fwd, synflood xlb,xlb-synproxy,nft-synproxy)")
	f.DurationVar(&o.Duration, "duration", 0, "length of one trial (default 10s; connection scenarios 2s; cc the keepalive interval)")
	f.StringSliceVar(&sizes, "sizes", nil, "frame sizes in bytes with FCS, or imix (7:4:1 of 64, 570, 1518) (default: the scenario's)")
	f.IntSliceVar(&o.Flows, "flows", nil, "flow counts; datapath: connection-table sizes (default: the scenario's)")
	f.StringSliceVar(&o.Variations, "variations", nil, "multiflow variations, e.g. l3-src,l4-both (default: all nine)")
	f.BoolVar(&o.OneWay, "one-way", false, "multiflow: send one way only (default both: the reals answer every frame back through the DUT, as VSPERF's bidirectional tests)")
	f.StringVar(&l4, "l4", "udp", "frames: udp, tcp-syn or tcp-ack")
	f.BoolVar(&o.IPv6, "ipv6", false, "IPv6 frames")
	f.Float64Var(&o.FixedRate, "rate", 500_000, "frame-sizes: the fixed offered rate, frames per second")
	f.Float64Var(&o.LossTolerance, "loss-tolerance", 0.1, "rfc2544: loss in percent a PDR trial may have")
	f.Float64Var(&o.Precision, "precision", 0.005, "rfc2544, multiflow: stop the search within this fraction of the maximum")
	f.IntVar(&o.MaxIterations, "max-iterations", 12, "rfc2544, multiflow: trials per search at most")
	f.IntVar(&o.BestOf, "best-of", 1, "rfc2544, multiflow: searches per cell, the best counting (the VSPERF report: 5)")
	f.DurationVar(&o.VerifyDuration, "verify-duration", 0, "rfc2544, multiflow: a final trial this long at each rate found (multiflow default 3s; the VSPERF report's were minutes)")
	f.StringSliceVar(&o.RedisTests, "redis-tests", nil, "redis: redis-benchmark tests (default the Arion report's ten: "+strings.Join(apps.RedisTests, ",")+")")
	f.IntSliceVar(&o.Services, "services", nil, "apply: service counts (default 1000,10000)")
	f.IntSliceVar(&o.Nodes, "nodes", nil, "cluster: node counts, a cluster each (default 1,2,3)")
	f.IntVar(&o.Streams, "streams", 0, "cluster: concurrent streams of the throughput trial (default 150)")
	f.IntVar(&o.Repeat, "repeat", 0, "datapath: BPF_PROG_RUN runs per figure (default 1000000); throughput: trials per TCP_STREAM test, the median counts (default 1)")
	f.IntSliceVar(&o.CPUs, "cpus", nil, "CPUs of the generator's senders, one sender each (default 0)")
	f.IntSliceVar(&o.Workers, "workers", nil, "worker CPU counts: each DUT that takes workers (xlb, xdp-fwd, xdp-fixed, kernel, nft) runs once per count, 0 on the receiving CPU, N as DUT-wN on the N highest CPUs")
	f.IntSliceVar(&o.Cores, "cores", nil, "cps: sender core counts, each a search (default 1)")
	f.IntSliceVar(&o.Conns, "conns", nil, "cc: concurrent connections to hold (default 1000000,10000000)")
	f.DurationVar(&o.Keepalive, "keepalive", 0, "cc: interval between a connection's requests (default 1m)")
	f.IntVar(&o.ConnTable, "conn-table", 0, "the xlb DUT's IPv4 connection table, in connections (default: cps 4194304, cc the most --conns, else 1048576)")
	f.Float64Var(&o.OpenRate, "open-rate", 0, "cc: connections opened per second (default 100000); synflood: legitimate connections per second (default 20000)")
	f.IntSliceVar(&o.PayloadSizes, "payload-sizes", nil, "cps: a search per request and response size; http: a wrk run per body size with a connection per request (WARP17's size sweep)")
	f.IntVar(&o.PayloadSize, "payload-size", 0, "XDP endpoints: request and response payload bytes (default 64; throughput 800, latency and cps 1)")
	f.IntVar(&o.Reals, "reals", 0, "real servers (default 2; cps 8, as the DPVS report)")
	f.StringVar(&o.LabName, "lab-name", "xlbbench", "name of the bench lab's namespaces")
	f.Uint8Var(&o.LabNet, "lab-net", 160, "second octet of the bench lab's addresses")
	f.StringVar(&out, "out", "", "results directory (default results/SCENARIO-TIME)")
	f.BoolVar(&o.Profile, "profile", false, "frame scenarios: perf record of every CPU during one unpaced trial per DUT, drawn as flame-DUT.svg next to the report")
	f.BoolVar(&quiet, "quiet", false, "no progress, no report on stdout")
	f.BoolVar(&quick, "quick", false, "all: tiny trials and tables, every table in minutes (a check, not a measure)")
	f.BoolVar(&o.AllowUnclean, "allow-unclean", false, "run a binary built with changes not committed (or outside a checkout); every report says so first")
	return cmd
}

// allFlags are the flags `xlb bench all` takes; the others belong to one
// scenario.
var allFlags = []string{"out", "quick", "quiet", "allow-unclean", "lab-name", "lab-net"}

// benchAll runs `xlb bench all`.
func benchAll(cmd *cobra.Command, g *globalFlags, o bench.Options, out string, quick, quiet bool) error {
	var wrong []string
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if !slices.Contains(allFlags, f.Name) {
			wrong = append(wrong, "--"+f.Name)
		}
	})
	if len(wrong) > 0 {
		return usageError{fmt.Errorf("%s: all runs every scenario with its own options; it takes only --%s",
			strings.Join(wrong, ", "), strings.Join(allFlags, ", --"))}
	}
	idx, err := benchrun.RunAll(cmd.Context(), out, quick, o, "xlb "+strings.Join(os.Args[1:], " "))
	var oe *benchrun.OptionError
	if errors.As(err, &oe) {
		return usageError{err}
	}
	if idx != nil && !quiet && !g.json {
		fmt.Fprintf(cmd.OutOrStdout(), "%s\nresults in %s\n", idx.Markdown(), out)
	}
	if err != nil {
		return err
	}
	if g.json {
		return printJSON(cmd, map[string]string{"results": out, "index": filepath.Join(out, "index.md")})
	}
	return nil
}
