// Package httpsource is the HTTP implementation of the engine's
// contract.PageSource: a Fetcher requests one page of a job's source with
// its retry policy (classified retries, capped exponential backoff with
// jitter, Retry-After, a 429 pausing every worker), the shared rate
// limit, the origin policy (credentials, configured headers and query
// values go to source.url's origin only; redirects and next URLs to
// another origin are followed without them), the per-attempt timeout and
// body limit, the JSON depth guard and validation, and the extraction and
// raw count of the records array.
//
// Authentication is wired, not consumed by the engine: source/auth builds
// a RoundTripper chain and cmd/ installs it with Fetcher.SetAuth.
package httpsource
