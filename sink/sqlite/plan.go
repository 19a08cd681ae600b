package sqlite

import (
	"context"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

var _ contract.SchemaPlanner = (*Sink)(nil)

// PlanSchema compares the table's columns with t's (see
// contract.SchemaPlanner), by affinity as widen does: between TEXT types
// nothing changes. It reads only. A widening copies one column, not the
// table, and takes no lock beyond the page's write: the size is 0.
func (s *Sink) PlanSchema(ctx context.Context, t *contract.Table) ([]contract.SchemaChange, int64, error) {
	if err := sqlkit.CheckTableName(t, 0); err != nil {
		return nil, 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, 0, s.wrap("read the columns of "+t.String(), err)
	}
	defer func() { _ = tx.Rollback() }()
	decls, err := declaredTypes(ctx, tx, t.Name)
	if err != nil {
		return nil, 0, s.wrap("read the columns of "+t.String(), err)
	}
	if len(decls) == 0 {
		return nil, 0, nil // no table yet: the run creates it as t says
	}
	var out []contract.SchemaChange
	for _, c := range t.Columns {
		switch h, ok := decls[sqlkit.ASCIILower(c.Name)]; {
		case !ok:
			out = append(out, contract.SchemaChange{Table: t.String(), Column: c.Name, To: string(c.Type)})
		case affinity(h) != affinity(sqliteType(c.Type)):
			out = append(out, contract.SchemaChange{Table: t.String(), Column: c.Name, From: h, To: string(c.Type)})
		}
	}
	return out, 0, nil
}
