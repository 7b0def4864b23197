// SPDX-License-Identifier: Apache-2.0

package apps

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
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

// throughput runs, at each MTU, a single TCP stream twice: the Go
// TCP_STREAM (one connection, so through any balancer) and iperf3.
func (r *appRun) throughput() (res []AppResult, err error) {
	if err := r.startServers(appPortIperf, "iperf3", "-s", "-p", strconv.Itoa(appPortIperf)); err != nil {
		return nil, err
	}
	srv, err := startGoServer(r.e.Topo, r.reals, appPortRR, sinkMode)
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	for _, mtu := range appMTUs {
		stream, iperf := fmt.Sprintf("TCP_STREAM MTU %d", mtu), fmt.Sprintf("iperf3 MTU %d", mtu)
		if mtu != 1500 {
			if err := r.setMTU(mtu); err != nil {
				r.progress("MTU %d: %v", mtu, err)
				note := fmt.Sprintf("MTU %d could not be set: %v", mtu, err)
				if m, err := maxMTU(r.e, r.e.Topo.Client(), "c0"); err == nil && m < mtu {
					note += fmt.Sprintf(" (the most c0 takes now is %d: its peer l0 has an XDP program without frags support)", m)
				}
				res = append(res, AppResult{Test: stream, Unit: "Mbps", Note: note, Command: "Go TCP_STREAM client (not run)"},
					AppResult{Test: iperf, Unit: "Mbps", Note: note, Command: "iperf3 (not run)"})
				if err := r.setMTU(1500); err != nil {
					return res, fmt.Errorf("restore MTU 1500: %w", err)
				}
				continue
			}
		}
		a, err := r.goStream(stream)
		if err == nil {
			res = append(res, a)
			a, err = r.iperf3(iperf)
			res = append(res, a)
		}
		if mtu != 1500 {
			err = errors.Join(err, r.setMTU(1500))
		}
		if err != nil {
			return res, err
		}
	}
	srv.Close()
	return res, r.stopAll()
}

// goStream runs the Go TCP_STREAM client against the sink servers.
func (r *appRun) goStream(test string) (AppResult, error) {
	dst := netip.AddrPortFrom(r.target, appPortRR)
	r.progress("%s to %s for %v", test, dst, r.o.Duration)
	st, err := runStream(r.ctx, r.e.Topo.Client(), dst, r.o.Duration)
	if err != nil {
		return AppResult{}, err
	}
	a := AppResult{Test: test, Unit: "Mbps", Retransmits: st.retransmits,
		Command: fmt.Sprintf("Go TCP_STREAM client to %s for %v: one connection, 128 KiB blocking writes, then waits for the server's close", dst, r.o.Duration)}
	if st.elapsed > 0 {
		a.Rate = float64(st.bytes) * 8 / st.elapsed.Seconds() / 1e6
	}
	r.progress("%s: %.0f Mbps, %d retransmits", test, a.Rate, a.Retransmits)
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
