package sync

// DefaultMaxDeleteRatio is target.max_delete_ratio's default: a sweep that
// would remove more than half of the table's rows fails its run.
const DefaultMaxDeleteRatio = 0.5
