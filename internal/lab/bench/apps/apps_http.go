// SPDX-License-Identifier: Apache-2.0

package apps

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/xlb-dev/xlb/internal/lab/bench"
)

// wrkConnections is wrk's connection count (-c), on one thread (-t1).
const wrkConnections = 32

// nginxConfig serves a short fixed answer on port from a process of its
// own (daemon off, one worker) with every file in dir, and the files of
// dir/www under /b/ (the size sweep's bodies).
func nginxConfig(dir string, port int) string {
	return fmt.Sprintf(`daemon off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    keepalive_requests 10000000;
    keepalive_timeout 300s;
    server {
        listen %[2]d backlog=4096;
        location / { return 200 "xlb bench\n"; }
        location /b/ { root %[1]s/www; }
    }
}
`, dir, port)
}

// wrkScript prints, when wrk is done, its summary and the latency at
// every whole percentile (wrk's percentile(100) is 0: max stands in).
const wrkScript = `done = function(summary, latency, requests)
  io.write(string.format("xlb-summary requests=%d duration_us=%d mean_us=%.3f max_us=%d\n",
    summary.requests, summary.duration, latency.mean, latency.max))
  for p = 0, 99 do
    io.write(string.format("xlb-cdf %d %d\n", p, latency:percentile(p)))
  end
  io.write(string.format("xlb-cdf 100 %d\n", latency.max))
end
`

// http runs nginx in the reals and wrk with keep-alive connections in
// the client.
func (r *appRun) http() ([]AppResult, error) {
	for _, i := range r.reals {
		dir := filepath.Join(r.dir, fmt.Sprintf("nginx-real%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("nginx directory: %w", err)
		}
		if err := writeBodies(dir, r.o.PayloadSizes); err != nil {
			return nil, err
		}
		conf := filepath.Join(dir, "nginx.conf")
		if err := os.WriteFile(conf, []byte(nginxConfig(dir, appPortHTTP)), 0o644); err != nil {
			return nil, fmt.Errorf("nginx config: %w", err)
		}
		if err := r.startServer(i, appPortHTTP, "/usr/sbin/nginx", "-c", conf, "-p", dir, "-e", filepath.Join(dir, "error.log")); err != nil {
			return nil, err
		}
	}
	script := filepath.Join(r.dir, "wrk-cdf.lua")
	if err := os.WriteFile(script, []byte(wrkScript), 0o644); err != nil {
		return nil, fmt.Errorf("wrk script: %w", err)
	}
	args := []string{"-t1", fmt.Sprintf("-c%d", wrkConnections), fmt.Sprintf("-d%ds", r.seconds()), "--latency", "-s", script,
		fmt.Sprintf("http://%s:%d/", r.target, appPortHTTP)}
	r.progress("wrk to %s for %d s", r.target, r.seconds())
	out, err := r.client("wrk", args...)
	if err != nil {
		return nil, err
	}
	a, err := parseWrk(out)
	if err != nil {
		return nil, fmt.Errorf("wrk to %s: %w", r.target, err)
	}
	a.Command = commandLine("wrk", args[:4]) + " -s wrk-cdf.lua " + args[len(args)-1]
	r.progress("wrk: %.0f req/s, p50 %.0f µs, p99 %.0f µs, %d errors", a.Rate, a.P50Us, a.P99Us, a.Errors)
	res := []AppResult{a}
	for _, size := range r.o.PayloadSizes {
		s, err := r.httpSetup(script, size)
		if err != nil {
			return res, errors.Join(err, r.stopAll())
		}
		res = append(res, s)
	}
	return res, r.stopAll()
}

// writeBodies writes dir/www/b/SIZE, a body of each size.
func writeBodies(dir string, sizes []int) error {
	www := filepath.Join(dir, "www", "b")
	if err := os.MkdirAll(www, 0o755); err != nil {
		return fmt.Errorf("nginx bodies: %w", err)
	}
	for _, n := range sizes {
		body := strings.Repeat("x", n)
		if err := os.WriteFile(filepath.Join(www, strconv.Itoa(n)), []byte(body), 0o644); err != nil {
			return fmt.Errorf("nginx body of %d bytes: %w", n, err)
		}
	}
	return nil
}

// httpSetup is one test of the size sweep: wrk asks for a body of size
// bytes on a connection of its own each time (Connection: close: the
// server closes), as WARP17's HTTP sessions, and the links' counters
// give the packets and bits around it.
func (r *appRun) httpSetup(script string, size int) (AppResult, error) {
	clientIf := "c0"
	if r.dut.Name() == "direct" {
		clientIf = bench.DirectClientIf
	}
	before, err := r.e.ReadLinks(clientIf)
	if err != nil {
		return AppResult{}, err
	}
	start := time.Now()
	args := []string{"-t1", fmt.Sprintf("-c%d", wrkConnections), fmt.Sprintf("-d%ds", r.seconds()), "--latency", "-s", script,
		"-H", "Connection: close", fmt.Sprintf("http://%s:%d/b/%d", r.target, appPortHTTP, size)}
	r.progress("wrk, a connection per request, %d-byte bodies, to %s for %d s", size, r.target, r.seconds())
	out, err := r.client("wrk", args...)
	if err != nil {
		return AppResult{}, err
	}
	after, err := r.e.ReadLinks(clientIf)
	if err != nil {
		return AppResult{}, err
	}
	a, err := parseWrk(out)
	if err != nil {
		return AppResult{}, fmt.Errorf("wrk to %s: %w", r.target, err)
	}
	links := after.RatesOver(before, time.Since(start))
	a.Test, a.PayloadSize, a.Links = fmt.Sprintf("HTTP GET %d B, a connection each", size), size, &links
	a.Command = commandLine("wrk", args[:4]) + " -s wrk-cdf.lua -H 'Connection: close' " + args[len(args)-1]
	r.progress("wrk: %.0f connections/s, %d errors", a.Rate, a.Errors)
	return a, nil
}

// parseWrk reads wrk --latency output: Requests/sec, the latency
// distribution (50, 90 and 99 %), the socket errors and non-2xx/3xx
// responses, and the xlb-summary and xlb-cdf lines of wrkScript when
// present.
func parseWrk(out string) (AppResult, error) {
	a := AppResult{Test: "wrk", Unit: "req/s"}
	var haveRate bool
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "Requests/sec:":
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				return a, fmt.Errorf("line %q: %w", line, err)
			}
			a.Rate, haveRate = v, true
		case len(f) == 2 && strings.HasSuffix(f[0], "%"):
			us, err := wrkDuration(f[1])
			if err != nil {
				return a, fmt.Errorf("line %q: %w", line, err)
			}
			switch f[0] {
			case "50%":
				a.P50Us = us
			case "90%":
				a.P90Us = us
			case "99%":
				a.P99Us = us
			}
		case strings.HasPrefix(strings.TrimSpace(line), "Socket errors:"):
			// Socket errors: connect 0, read 0, write 0, timeout 0
			for _, kv := range strings.Split(strings.TrimPrefix(strings.TrimSpace(line), "Socket errors:"), ",") {
				var k string
				var n uint64
				if _, err := fmt.Sscan(kv, &k, &n); err != nil {
					return a, fmt.Errorf("line %q: %w", line, err)
				}
				a.Errors += n
			}
		case strings.HasPrefix(strings.TrimSpace(line), "Non-2xx or 3xx responses:"):
			n, err := strconv.ParseUint(f[len(f)-1], 10, 64)
			if err != nil {
				return a, fmt.Errorf("line %q: %w", line, err)
			}
			a.Errors += n
		case len(f) > 0 && f[0] == "xlb-summary":
			for _, kv := range f[1:] {
				k, v, _ := strings.Cut(kv, "=")
				x, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return a, fmt.Errorf("line %q: %w", line, err)
				}
				switch k {
				case "mean_us":
					a.MeanUs = x
				case "max_us":
					a.MaxUs = x
				}
			}
		case len(f) == 3 && f[0] == "xlb-cdf":
			p, err1 := strconv.Atoi(f[1])
			us, err2 := strconv.ParseFloat(f[2], 64)
			if err1 != nil || err2 != nil || p != len(a.CDFUs) {
				return a, fmt.Errorf("line %q: want percentile %d", line, len(a.CDFUs))
			}
			a.CDFUs = append(a.CDFUs, us)
		}
	}
	switch {
	case !haveRate:
		return a, fmt.Errorf("no Requests/sec in: %s", lastLines(out, 5))
	case a.P50Us == 0 || a.P99Us == 0:
		return a, fmt.Errorf("no latency distribution (run with --latency) in: %s", lastLines(out, 8))
	case a.CDFUs != nil && len(a.CDFUs) != 101:
		return a, fmt.Errorf("%d xlb-cdf lines, want 101", len(a.CDFUs))
	}
	return a, nil
}

// wrkDuration reads a wrk latency such as 133.00us, 1.25ms or 2.00s,
// in µs.
func wrkDuration(s string) (float64, error) {
	for _, u := range []struct {
		suffix string
		us     float64
	}{{"us", 1}, {"ms", 1e3}, {"m", 60e6}, {"s", 1e6}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, fmt.Errorf("latency %q: %w", s, err)
			}
			return x * u.us, nil
		}
	}
	return 0, fmt.Errorf("latency %q: unknown unit", s)
}

// writeSetupSweep is WARP17's HTTP charts as a table: for each DUT and
// body size, connections a second (one request each) and the client's
// packets and bits a second.
func writeSetupSweep(b *strings.Builder, results []AppResult) {
	_, duts := appOrder(results)
	var rows []string
	for _, d := range duts {
		for _, a := range results {
			if a.Config() != d || a.PayloadSize == 0 || a.Links == nil {
				continue
			}
			l := a.Links
			rows = append(rows, fmt.Sprintf("| %s | %d | %.0f | %.0f | %.0f | %.1f | %.1f | %d |", d, a.PayloadSize, a.Rate,
				l.ClientTxPPS, l.ClientRxPPS, l.ClientTxBits/1e6, l.ClientRxBits/1e6, a.Errors))
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "## HTTP setup rate and packets against the body size (the WARP17 HTTP charts)\n\n"+
		"wrk, 1 thread, %d connections, each GET on a connection of its own (Connection: close), nginx answering a body of "+
		"the size; the client's packets and bits a second over the test.\n\n"+
		"| DUT | body B | sessions/s | client pktTx/s | client pktRx/s | client Mbps Tx | client Mbps Rx | errors |\n"+
		"|---|---:|---:|---:|---:|---:|---:|---:|\n%s\n\n", wrkConnections, strings.Join(rows, "\n"))
}
