// SPDX-License-Identifier: Apache-2.0

package topo

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/lab/netns"
	"github.com/xlb-dev/xlb/internal/testenv"
)

// webPort is where the daemon serves its page in the lab's balancer.
const webPort = 9469

// TestWebPageInBrowser loads the daemon's page (--web) in headless
// Chromium while the client sends requests through the VIP: the page
// loads and shows the services and reals, the service's connection
// count and a real's rate move with the traffic, and a real drained
// through the API shows as drained.
func TestWebPageInBrowser(t *testing.T) {
	testenv.RequireTool(t, "chromium")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	topo := testTopology(t, 2)
	_, d := startLabWith(t, ctx, topo, topo.Config("rr"), "--web", fmt.Sprintf("127.0.0.1:%d", webPort))
	page := forwardIntoNamespace(t, topo.LB(), netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), webPort))

	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath("chromium"), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true))...)
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()

	vip := netip.AddrPortFrom(topo.VIP(), ServicePort)
	svc := fmt.Sprintf(`tr.service[data-service="tcp %s"]`, vip)
	real2 := netip.AddrPortFrom(topo.RealAddr(2), ServicePort)
	real2Row := fmt.Sprintf(`tr.real[data-service="tcp %s"][data-real="%s"]`, vip, real2)
	if err := chromedp.Do(browser, chromedp.Navigate("http://"+page+"/"), chromedp.WaitVisible(chromedp.CSS(svc)),
		chromedp.WaitVisible(chromedp.CSS(real2Row))); err != nil {
		t.Fatalf("the page did not show the service and its reals: %v", err)
	}
	number := func(js string) float64 {
		t.Helper()
		s, err := chromedp.Run(browser, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		f, _ := strconv.ParseFloat(s, 64)
		return f
	}
	connsJS := fmt.Sprintf(`document.querySelector('%s td[data-total="conns"]').textContent`, svc)
	rateJS := fmt.Sprintf(`document.querySelector('%s td[data-rate="conns"]').dataset.value`, real2Row)
	before := number(connsJS)

	// traffic: the numbers move
	sent := make(chan error, 1)
	go func() {
		for range 30 {
			if _, err := fetchReal(ctx, topo, vip); err != nil {
				sent <- err
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		sent <- nil
	}()
	sawRate := false
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		sawRate = sawRate || number(rateJS) > 0
		if number(connsJS) >= before+30 && sawRate {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page's numbers did not move: connections %v (before %v), a rate seen on real 2: %v", number(connsJS), before, sawRate)
		}
	}
	if err := <-sent; err != nil {
		t.Fatalf("traffic: %v", err)
	}

	// drained through the API, drained on the page
	path := fmt.Sprintf("%s/reals/%s/%d", api.ServicePath("tcp", topo.VIP().String(), ServicePort), topo.RealAddr(2), ServicePort)
	if _, err := d.Client().Change(ctx, http.MethodPut, path, api.Weight(0)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(browser, chromedp.WaitVisible(chromedp.CSS(real2Row+`[data-state="drained"]`))); err != nil {
		t.Fatalf("real 2 drained does not show as drained: %v", err)
	}
}

// forwardIntoNamespace listens on the host's loopback and forwards each
// connection to to inside namespace ns (the socket is made there), for a
// browser on the host to reach a page served in a lab namespace. It
// returns the host address; the listener closes at the test's end.
func forwardIntoNamespace(t *testing.T, ns string, to netip.AddrPort) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var up net.Conn
				if err := netns.Run(ns, func() error {
					var err error
					up, err = net.DialTimeout("tcp", to.String(), 3*time.Second)
					return err
				}); err != nil {
					return
				}
				defer up.Close()
				go func() { _, _ = io.Copy(up, c) }()
				_, _ = io.Copy(c, up)
			}()
		}
	}()
	return ln.Addr().String()
}
