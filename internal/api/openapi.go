// SPDX-License-Identifier: Apache-2.0

package api

import _ "embed"

// OpenAPI is the OpenAPI 3 document of the API, served at /openapi.json
// (docs/openapi.json is a copy, checked by a test).
//
//go:embed openapi.json
var OpenAPI []byte
