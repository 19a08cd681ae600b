// Package sqlkit holds what the SQL databases of idemsync share: quoting and
// checking identifiers (QuoteIdent, CheckTable), converting and comparing
// engine values (ParseDecimal, AsInt64, CompareNumbers, VersionNewer), the
// key forms that make equal keys one row (CanonicalKeys), reading a table
// back as text, and keeping passwords out of messages (RedactURL, Scrub,
// SafeError). It imports only package sync; the database packages import
// it, never the reverse.
package sqlkit
