package sqlite

// RaceEnabledForTest lets the external tests skip allocation counts too.
const RaceEnabledForTest = raceEnabled
