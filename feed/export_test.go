package feed

// EventsQuery is the reader's query, for the tests that read its plan.
var EventsQuery = eventsQuery
