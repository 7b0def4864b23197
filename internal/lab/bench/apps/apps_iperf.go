// SPDX-License-Identifier: Apache-2.0

package apps

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xlb-dev/xlb/internal/lab/bench"
	"github.com/xlb-dev/xlb/internal/lab/netns"
)

// appMTUs are the MTUs of the throughput scenario.
var appMTUs = []int{1500, 9000}

// iperfAttempts is how often an iperf3 run through a balancer is tried:
// iperf3 opens a control and a data connection, which must reach the
// same real, and a balancer picks a real per connection. When they
// reach different reals, the client waits for ever: iperfGrace after
// the test's end, it is killed.
const (
	iperfAttempts = 4
	iperfGrace    = 4 * time.Second
)

// streamCounts are the TCP_STREAM runs of the throughput scenario: one
// connection, as the Arion report's netperf TCP_STREAM table, and 150 at
// once, as its 150 concurrent iperf tests.
var streamCounts = []int{1, 150}

// throughput runs the Arion report's TCP_STREAM table: at each MTU, in
// each XDP mode of a DUT attached with XDP (xlb, xdp-fwd: native, then
// generic; the others have none), the Go TCP_STREAM client (netperf's
// TCP_STREAM) over each of streamCounts connections, then one iperf3
// stream. In generic mode the senders' veths have TSO and GSO off, as the
// operator guide asks.
func (r *appRun) throughput() (res []AppResult, err error) {
	if err := r.startServers(appPortIperf, "iperf3", "-s", "-p", strconv.Itoa(appPortIperf)); err != nil {
		return nil, err
	}
	srv, err := startGoServer(r.e.Topo, r.reals, appPortRR, sinkMode, -1)
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	modes := []string{""}
	ms, switches := bench.SwitchesMode(r.dut)
	if switches {
		modes = bench.XDPModes
	}
	for _, mtu := range appMTUs {
		if mtu != 1500 {
			if err := r.setMTU(mtu); err != nil {
				res = append(res, r.mtuRefused(mtu, modes, err)...)
				if err := r.setMTU(1500); err != nil {
					return res, fmt.Errorf("restore MTU 1500: %w", err)
				}
				continue
			}
		}
		for _, mode := range modes {
			if switches {
				r.progress("MTU %d, %s mode", mtu, mode)
				if err := ms.SetMode(r.ctx, r.e, mode); err != nil {
					return res, fmt.Errorf("%s in %s mode: %w", r.dut.Name(), mode, err)
				}
			}
			a, err := r.modeStreams(mtu, mode)
			res = append(res, a...)
			if err != nil {
				return res, err
			}
		}
		if switches {
			if err := ms.SetMode(r.ctx, r.e, bench.XDPModes[0]); err != nil {
				return res, err
			}
		}
		if mtu != 1500 {
			if err := r.setMTU(1500); err != nil {
				return res, err
			}
		}
	}
	srv.Close()
	return res, r.stopAll()
}

// modeStreams runs the streams of one MTU and mode: TCP_STREAM over each
// of streamCounts connections, then iperf3.
func (r *appRun) modeStreams(mtu int, mode string) (res []AppResult, err error) {
	if mode == "generic" {
		if err := r.e.SenderOffloads(false); err != nil {
			return nil, err
		}
		defer func() { err = errors.Join(err, r.e.SenderOffloads(true)) }()
	}
	for _, n := range streamCounts {
		a, err := r.goStreams(streamTest(mtu, n), n)
		if err != nil {
			return res, err
		}
		a.Mode, a.Streams, a.MTU = mode, n, mtu
		res = append(res, a)
	}
	a, err := r.iperf3(fmt.Sprintf("iperf3 MTU %d", mtu))
	a.Mode, a.Streams, a.MTU = mode, 1, mtu
	return append(res, a), err
}

// streamTest names the TCP_STREAM test of n connections at an MTU.
func streamTest(mtu, n int) string {
	if n == 1 {
		return fmt.Sprintf("TCP_STREAM MTU %d", mtu)
	}
	return fmt.Sprintf("TCP_STREAM MTU %d, %d streams", mtu, n)
}

// mtuRefused is the results of an MTU the lab could not set: every test
// of every mode, with why.
func (r *appRun) mtuRefused(mtu int, modes []string, err error) []AppResult {
	r.progress("MTU %d: %v", mtu, err)
	note := fmt.Sprintf("MTU %d could not be set: %v", mtu, err)
	if m, err := maxMTU(r.e, r.e.Topo.Client(), "c0"); err == nil && m < mtu {
		note += fmt.Sprintf(" (the most c0 takes now is %d: its peer l0 has an XDP program without frags support)", m)
	}
	var res []AppResult
	for _, mode := range modes {
		for _, n := range streamCounts {
			res = append(res, AppResult{Test: streamTest(mtu, n), Unit: "Mbps", Mode: mode, Streams: n, MTU: mtu, Note: note,
				Command: "Go TCP_STREAM client (not run)"})
		}
		res = append(res, AppResult{Test: fmt.Sprintf("iperf3 MTU %d", mtu), Unit: "Mbps", Mode: mode, Streams: 1, MTU: mtu,
			Note: note, Command: "iperf3 (not run)"})
	}
	return res
}

// goStreams runs the Go TCP_STREAM client over n connections against the
// sink servers, AppOptions.Trials times: the median trial by rate is the
// result, every trial's rate beside it.
func (r *appRun) goStreams(test string, n int) (AppResult, error) {
	trials := max(r.o.Trials, 1)
	var runs []AppResult
	for i := 0; i < trials; i++ {
		a, err := r.goStreamsOnce(test, n)
		if err != nil {
			return AppResult{}, err
		}
		runs = append(runs, a)
	}
	if trials == 1 {
		return runs[0], nil
	}
	slices.SortFunc(runs, func(a, b AppResult) int { return cmp.Compare(a.Rate, b.Rate) })
	med := runs[len(runs)/2]
	for _, a := range runs {
		med.TrialRates = append(med.TrialRates, a.Rate)
	}
	r.progress("%s: median of %d trials %.0f Mbps (%v)", test, trials, med.Rate, med.TrialRates)
	return med, nil
}

// goStreamsOnce is one trial of goStreams.
func (r *appRun) goStreamsOnce(test string, n int) (AppResult, error) {
	dst := netip.AddrPortFrom(r.target, appPortRR)
	r.progress("%s to %s for %v", test, dst, r.o.Duration)
	into0, out0, err := r.e.RingDrops()
	if err != nil {
		return AppResult{}, err
	}
	st, err := runStreams(r.ctx, r.e.Topo.Client(), dst, r.o.Duration, n)
	if err != nil {
		return AppResult{}, err
	}
	into1, out1, err := r.e.RingDrops()
	if err != nil {
		return AppResult{}, err
	}
	a := AppResult{Test: test, Unit: "Mbps", Retransmits: st.retransmits, Errors: uint64(st.failed),
		RingDrops: into1 - into0 + out1 - out0,
		Command: fmt.Sprintf("Go TCP_STREAM client to %s for %v: %d connection(s) at once, 128 KiB blocking writes, then "+
			"each waits for its server's close", dst, r.o.Duration, n)}
	if st.elapsed > 0 {
		a.Rate = float64(st.bytes) * 8 / st.elapsed.Seconds() / 1e6
		a.RetransmitsPerSec = float64(st.retransmits) / st.elapsed.Seconds()
	}
	r.progress("%s: %.0f Mbps, %d retransmits", test, a.Rate, a.Retransmits)
	if st.failed > 0 {
		r.progress("%s: %d of %d connections did not complete (not counted): %v", test, st.failed, n, st.firstErr)
	}
	return a, nil
}

// iperf3 runs one iperf3 stream. Through a balancer its data connection
// may reach another real than its control connection: the run fails,
// and is tried again, up to iperfAttempts times; the last failure
// becomes the result's note.
func (r *appRun) iperf3(test string) (AppResult, error) {
	args := []string{"-c", r.target.String(), "-p", strconv.Itoa(appPortIperf), "-t", strconv.Itoa(r.seconds()), "-J", "--connect-timeout", "3000"}
	attempts := 1
	if r.dut.Balances() && len(r.reals) > 1 {
		attempts = iperfAttempts
	}
	var failures []string
	for i := 0; i < attempts; i++ {
		r.progress("%s to %s for %d s (attempt %d)", test, r.target, r.seconds(), i+1)
		out, err := r.clientFor(time.Duration(r.seconds())*time.Second+iperfGrace, "iperf3", args...)
		if r.ctx.Err() != nil {
			return AppResult{}, r.ctx.Err()
		}
		a, perr := parseIperf3(out)
		if perr == nil && err == nil {
			a.Test, a.Command = test, commandLine("iperf3", args)
			a.RetransmitsPerSec = float64(a.Retransmits) / float64(r.seconds())
			r.progress("%s: %.0f Mbps, %d retransmits", test, a.Rate, a.Retransmits)
			return a, nil
		}
		// iperf3's own error if it gave one, else how the client failed
		if err != nil && (perr == nil || !strings.HasPrefix(perr.Error(), "iperf3: ")) {
			perr = err
		}
		failures = append(failures, perr.Error())
	}
	if attempts == 1 {
		return AppResult{}, fmt.Errorf("%s to %s: %s", commandLine("iperf3", args), r.target, failures[0])
	}
	return AppResult{Test: test, Unit: "Mbps", Command: commandLine("iperf3", args),
		Note: fmt.Sprintf("no run of %d succeeded: iperf3's data connection must reach the real of its control connection, "+
			"and %s picks a real per connection; last error: %s", attempts, r.dut.Name(), failures[len(failures)-1])}, nil
}

// iperf3JSON is the part of iperf3 -J's output the results take.
type iperf3JSON struct {
	End struct {
		SumSent struct {
			BitsPerSecond float64 `json:"bits_per_second"`
			Retransmits   uint64  `json:"retransmits"`
		} `json:"sum_sent"`
		SumReceived struct {
			BitsPerSecond float64 `json:"bits_per_second"`
		} `json:"sum_received"`
	} `json:"end"`
	Error string `json:"error"`
}

// parseIperf3 reads iperf3 -J output: the rate the receiver measured
// (Mbps) and the sender's retransmits.
func parseIperf3(out string) (AppResult, error) {
	a := AppResult{Unit: "Mbps"}
	var j iperf3JSON
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		return a, fmt.Errorf("iperf3 JSON: %w: %s", err, lastLines(out, 3))
	}
	if j.Error != "" {
		return a, fmt.Errorf("iperf3: %s", j.Error)
	}
	a.Rate, a.Retransmits = j.End.SumReceived.BitsPerSecond/1e6, j.End.SumSent.Retransmits
	if a.Rate <= 0 {
		return a, fmt.Errorf("iperf3: no bits received (end.sum_received)")
	}
	return a, nil
}

// setMTU sets the MTU of every lab link and of the direct link. For
// 1500, the restore, it tries every link whatever fails.
func (r *appRun) setMTU(mtu int) error {
	err := r.e.SetMTU(mtu)
	if err != nil && mtu != 1500 {
		return err
	}
	t := r.e.Topo
	for _, l := range [][2]string{{t.Client(), bench.DirectClientIf}, {t.Real(1), bench.DirectRealIf}} {
		err = errors.Join(err, netns.IPIn(l[0], "link", "set", l[1], "mtu", strconv.Itoa(mtu)))
	}
	return err
}

// maxMTU is the largest MTU interface ifname in namespace ns takes now:
// a veth whose peer has an XDP program without frags support takes
// frames of a page at most.
func maxMTU(e *bench.Env, ns, ifname string) (int, error) {
	out, err := e.RunIn(ns, "ip", "-j", "-d", "link", "show", "dev", ifname)
	if err != nil {
		return 0, err
	}
	var links []struct {
		MaxMTU int `json:"max_mtu"`
	}
	if err := json.Unmarshal([]byte(out), &links); err != nil || len(links) != 1 {
		return 0, fmt.Errorf("ip -j link show %s in %s: %v", ifname, ns, err)
	}
	return links[0].MaxMTU, nil
}
