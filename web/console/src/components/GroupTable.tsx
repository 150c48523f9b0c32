import { memo, useMemo, useState } from 'react';
import { Pagination } from '@patternfly/react-core';
import '@patternfly/react-styles/css/components/Table/table.css';
import type { GroupView } from '../api';
import { groupPath } from '../format';
import { navigate } from '../router';
import { HealthLabel } from './Badges';
import { LagBar } from './LagBar';
import { Tag } from './Tag';

// perPage is how many groups a namespace shows at once. A page of 20 rows
// draws in a few milliseconds; 100 rows of a large zone did not.
export const perPage = 20;

// atRiskFirst orders groups at risk before the others, keeping the server's
// order within each: a problem is never on a later page.
export function atRiskFirst(groups: GroupView[]): GroupView[] {
  return [...groups.filter((g) => g.atRisk), ...groups.filter((g) => !g.atRisk)];
}

// GroupTable is a namespace's protection groups, a page at a time. It is
// PatternFly's table markup written out rather than the Table components:
// those add per-cell work (truncation measurement, generated ids) that a
// large zone pays hundreds of times over.
export function GroupTable({ namespace, groups }: { namespace: string; groups: GroupView[] }) {
  const [page, setPage] = useState(1);
  const sorted = useMemo(() => atRiskFirst(groups), [groups]);
  const pages = Math.max(1, Math.ceil(sorted.length / perPage));
  const current = Math.min(page, pages); // the list may have shrunk since
  const shown = sorted.slice((current - 1) * perPage, current * perPage);
  const atRisk = groups.filter((g) => g.atRisk).length;
  const paged = sorted.length > perPage;
  return (
    <>
      <table
        className="pf-v6-c-table pf-m-grid-md pf-m-compact"
        aria-label={`Protection groups of ${namespace}`}
      >
        <thead className="pf-v6-c-table__thead">
          <tr className="pf-v6-c-table__tr">
            <th className="pf-v6-c-table__th pf-m-wrap" scope="col">Group</th>
            <th className="pf-v6-c-table__th pf-m-wrap" scope="col">Active cluster</th>
            <th className="pf-v6-c-table__th pf-m-wrap" scope="col">VMs</th>
            <th className="pf-v6-c-table__th pf-m-wrap" scope="col">Replication</th>
            <th className="pf-v6-c-table__th pf-m-wrap" scope="col">RPO lag</th>
            <th className="pf-v6-c-table__th pf-m-wrap" scope="col">State</th>
          </tr>
        </thead>
        <tbody className="pf-v6-c-table__tbody">
          {shown.map((g) => (
            <GroupRow key={g.name} g={g} />
          ))}
          {groups.length === 0 && (
            <tr className="pf-v6-c-table__tr">
              <td className="pf-v6-c-table__td" colSpan={6}>
                No protection groups yet.
              </td>
            </tr>
          )}
        </tbody>
      </table>
      {paged && (
        <div className="sr-groups-pages">
          <span aria-live="polite">
            Groups <b>{(current - 1) * perPage + 1}–{(current - 1) * perPage + shown.length}</b> of <b>{sorted.length}</b>
            {atRisk > 0 && `; the ${atRisk} at risk come first`}
          </span>
          <Pagination
            itemCount={sorted.length}
            perPage={perPage}
            perPageOptions={[]}
            page={current}
            onSetPage={(_e, p) => setPage(p)}
            widgetId={`groups-${namespace}`}
            variant="bottom"
            isCompact
            titles={{ paginationAriaLabel: `Pages of the groups of ${namespace}` }}
          />
        </div>
      )}
    </>
  );
}

// GroupRow is memoised: a change re-reads the overview, and only the rows
// whose group changed are drawn again.
const GroupRow = memo(
  function GroupRow({ g }: { g: GroupView }) {
    return (
      <tr className="pf-v6-c-table__tr">
        <td className="pf-v6-c-table__td" data-label="Group">
          <button
            type="button"
            className="pf-v6-c-button pf-m-link pf-m-inline"
            onClick={() => navigate(groupPath(g.namespace, g.name))}
          >
            <span className="pf-v6-c-button__text">{g.name}</span>
          </button>{' '}
          {g.testActive && <Tag color="purple">test active</Tag>} {g.atRisk && <Tag status="danger">at risk</Tag>}
        </td>
        <td className="pf-v6-c-table__td" data-label="Active cluster">
          {g.activeCluster || '—'}
        </td>
        <td className="pf-v6-c-table__td" data-label="VMs">
          {g.vms}
        </td>
        <td className="pf-v6-c-table__td" data-label="Replication">
          <HealthLabel health={g.health} />
        </td>
        <td className="pf-v6-c-table__td" data-label="RPO lag">
          <LagBar group={g} />
        </td>
        <td className="pf-v6-c-table__td" data-label="State">
          {g.state || '—'}
        </td>
      </tr>
    );
  },
  (a, b) => JSON.stringify(a.g) === JSON.stringify(b.g),
);
