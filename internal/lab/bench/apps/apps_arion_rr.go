// SPDX-License-Identifier: Apache-2.0

package apps

import (
	"fmt"
	"strings"
)

// writeArionRRTable writes the Arion report's TCP_RR and TCP_CRR
// comparison: each configuration (a DUT, in each XDP mode it ran)
// against direct, with the client and server on two CPUs, as on two
// machines. The report draws it as charts; its figures are transactions
// per second and what a configuration adds to a transaction.
func writeArionRRTable(b *strings.Builder, results []AppResult) {
	const place = ", two CPUs"
	rr, crr := "TCP_RR"+place, "TCP_CRR"+place
	_, configs := appOrder(results)
	direct, ok := findApp(results, rr, "direct")
	directCRR, okCRR := findApp(results, crr, "direct")
	if !ok || !okCRR || direct.Rate <= 0 || directCRR.Rate <= 0 {
		return
	}
	fmt.Fprintf(b, "## TCP_RR and TCP_CRR by configuration (the Arion report's charts)\n\n"+
		"Client and server pinned to two CPUs; XDP DUTs in native and in generic mode.\n\n"+
		"| Config | TCP_RR trans/s | difference (%%) | mean us | added us | TCP_CRR trans/s | difference (%%) | mean us | added us |\n"+
		"| :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, c := range configs {
		a, ok1 := findApp(results, rr, c)
		k, ok2 := findApp(results, crr, c)
		if !ok1 || !ok2 || a.Note != "" || k.Note != "" {
			continue
		}
		fmt.Fprintf(b, "| %s | %.0f | %.1f%% | %.1f | %+.1f | %.0f | %.1f%% | %.1f | %+.1f |\n", c,
			a.Rate, 100*a.Rate/direct.Rate, a.MeanUs, a.MeanUs-direct.MeanUs,
			k.Rate, 100*k.Rate/directCRR.Rate, k.MeanUs, k.MeanUs-directCRR.MeanUs)
	}
	b.WriteString("\n")
}
