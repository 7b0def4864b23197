// SPDX-License-Identifier: Apache-2.0

package config_test

import (
	"fmt"

	"github.com/xlb-dev/xlb/internal/config"
)

func ExampleConfig_Validate() {
	c, err := config.Parse([]byte(`
interfaces: [eth0]
services:
  - vip: 10.0.0.300
    port: 80
    protocol: tcp
    local_ips: [10.0.2.254]
    reals: [{address: 10.0.2.1, port: 8080, weight: 70000}]
`))
	if err != nil {
		panic(err)
	}
	fmt.Println(c.Validate())
	// Output:
	// services[0].vip: "10.0.0.300" is not an IP address
	// services[0].reals[0].weight: 70000: want 0 to 65535 (0 drains)
}
