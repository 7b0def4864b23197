// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"gopkg.in/yaml.v3"

	"github.com/xlb-dev/xlb/internal/testenv"
)

// The dashboard and the alert rules shipped in dist/.
var (
	dashboardFile = filepath.Join("..", "..", "dist", "grafana", "xlb-dashboard.json")
	rulesFile     = filepath.Join("..", "..", "dist", "prometheus", "xlb-rules.yml")
	rulesTestFile = filepath.Join("..", "..", "dist", "prometheus", "xlb-rules.test.yml")
)

// registeredMetrics maps each metric the daemon's collector describes to
// its label names.
func registeredMetrics(t *testing.T) map[string][]string {
	t.Helper()
	ch := make(chan *prometheus.Desc, 256)
	go func() {
		newCollector(fakeCounters{}).Describe(ch)
		close(ch)
	}()
	re := regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}`)
	out := map[string][]string{}
	for d := range ch {
		m := re.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read %s", d)
		}
		var labels []string
		if m[2] != "" {
			labels = strings.Split(m[2], ",")
		}
		out[m[1]] = labels
	}
	return out
}

// dashboardExprs returns every query of the dashboard, by panel title.
func dashboardExprs(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	out := map[string]string{}
	for _, p := range dash.Panels {
		for i, tg := range p.Targets {
			out[fmt.Sprintf("dashboard panel %q query %d", p.Title, i+1)] = tg.Expr
		}
	}
	if len(out) < 10 {
		t.Fatalf("the dashboard has %d queries", len(out))
	}
	return out
}

// ruleExprs returns every rule's expression, by alert name.
func ruleExprs(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &rules); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	out := map[string]string{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			out["alert "+r.Alert] = r.Expr
		}
	}
	for _, want := range []string{"XLBRealDown", "XLBServiceWithoutRealsTakingConnections", "XLBDropsRising", "XLBConnTableNearlyFull"} {
		if _, ok := out["alert "+want]; !ok {
			t.Errorf("no alert %s in %s", want, rulesFile)
		}
	}
	return out
}

var (
	metricName  = regexp.MustCompile(`\bxlb_[a-z0-9_]+\b`)
	groupLabels = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	matchLabels = regexp.MustCompile(`([a-z_]+)\s*(?:=~|!~|!=|=)\s*"`)
)

// TestDashboardAndRulesUseRegisteredMetrics: every metric a dashboard
// query or an alert rule names is one the daemon registers, and every
// label it groups or matches by is a label of one of its metrics (or a
// target label Prometheus adds).
func TestDashboardAndRulesUseRegisteredMetrics(t *testing.T) {
	registered := registeredMetrics(t)
	exprs := dashboardExprs(t)
	for k, v := range ruleExprs(t) {
		exprs[k] = v
	}
	for where, expr := range exprs {
		names := metricName.FindAllString(expr, -1)
		if len(names) == 0 {
			t.Errorf("%s names no xlb metric: %s", where, expr)
		}
		known := map[string]bool{"instance": true, "job": true}
		for _, n := range names {
			labels, ok := registered[n]
			if !ok {
				t.Errorf("%s: %s is not a metric the daemon registers", where, n)
			}
			for _, l := range labels {
				known[l] = true
			}
		}
		var used []string
		for _, m := range groupLabels.FindAllStringSubmatch(expr, -1) {
			for _, l := range strings.Split(m[1], ",") {
				used = append(used, strings.TrimSpace(l))
			}
		}
		for _, m := range matchLabels.FindAllStringSubmatch(expr, -1) {
			used = append(used, m[1])
		}
		for _, l := range used {
			if l != "" && !known[l] {
				t.Errorf("%s: label %q is not a label of %v", where, l, names)
			}
		}
	}
}

// TestPromtoolRules: promtool checks the rules and runs their unit tests
// (dist/prometheus/xlb-rules.test.yml), and parses every dashboard query
// (as recording rules: promtool has no PromQL check of its own).
func TestPromtoolRules(t *testing.T) {
	testenv.RequireTool(t, "promtool")
	for _, args := range [][]string{{"check", "rules", rulesFile}, {"test", "rules", rulesTestFile}} {
		if out, err := exec.Command("promtool", args...).CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	exprs := dashboardExprs(t)
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range exprs {
			if !yield(k) {
				return
			}
		}
	})
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, k := range keys {
		expr := strings.NewReplacer("$__rate_interval", "5m", "$instance", ".*").Replace(exprs[k])
		q, _ := json.Marshal(expr)
		fmt.Fprintf(&b, "      - record: dashboard:query%d\n        expr: %s\n", i, q)
	}
	f := filepath.Join(t.TempDir(), "dashboard-queries.yml")
	if err := os.WriteFile(f, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("promtool", "check", "rules", f).CombinedOutput(); err != nil {
		t.Errorf("the dashboard's queries do not parse: %v\n%s", err, out)
	}
}

// TestMetricsTableMatchesTheCollector: docs/operator-guide.md's Metrics
// table lists every metric the daemon registers, with its labels, and
// nothing else.
func TestMetricsTableMatchesTheCollector(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "operator-guide.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "\n## Metrics\n")
	if !ok {
		t.Fatal("docs/operator-guide.md has no Metrics section")
	}
	table, _, _ = strings.Cut(table, "\n## ")
	row := regexp.MustCompile("(?m)^\\| `(xlb_[a-z0-9_]+)` \\| ([^|]*) \\|")
	documented := map[string][]string{}
	for _, m := range row.FindAllStringSubmatch(table, -1) {
		var labels []string
		for _, l := range strings.Split(m[2], ",") {
			if l = strings.Trim(strings.TrimSpace(l), "`"); l != "" && l != "-" {
				labels = append(labels, l)
			}
		}
		documented[m[1]] = labels
	}
	registered := registeredMetrics(t)
	for name, labels := range registered {
		doc, ok := documented[name]
		switch {
		case !ok:
			t.Errorf("%s is registered but not in the Metrics table", name)
		case !slices.Equal(doc, labels):
			t.Errorf("%s: the table says labels %v, the collector %v", name, doc, labels)
		}
	}
	for name := range documented {
		if _, ok := registered[name]; !ok {
			t.Errorf("%s is in the Metrics table but not registered", name)
		}
	}
}
