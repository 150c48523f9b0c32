import {
  DescriptionList,
  DescriptionListDescription,
  DescriptionListGroup,
  DescriptionListTerm,
} from '@patternfly/react-core';
import type { ReactNode } from 'react';
import type { ConsistencyView, DrillView } from '../api';
import { Tag } from './Tag';

// utc renders a time as the drill schedule is written: in UTC, to the second.
export function utc(t?: string): string {
  if (!t) return '—';
  return new Date(t).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
}

function Item({ term, children }: { term: string; children: ReactNode }) {
  return (
    <DescriptionListGroup>
      <DescriptionListTerm>{term}</DescriptionListTerm>
      <DescriptionListDescription>{children}</DescriptionListDescription>
    </DescriptionListGroup>
  );
}

function result(r?: string) {
  if (!r) return 'none yet';
  return r === 'Passed' ? <Tag status="success">Passed</Tag> : <Tag status="danger">{r}</Tag>;
}

// Drills shows the group's drill schedule and how its drills went
// (spec.drill, status.drill).
export function Drills({ group, drill }: { group: string; drill?: DrillView }) {
  if (!drill) {
    return (
      <p>
        No drill schedule (spec.drill). <code>kubectl siterecovery drill {group}</code> runs one now.
      </p>
    );
  }
  return (
    <DescriptionList isHorizontal columnModifier={{ lg: '2Col' }} aria-label="Drills">
      <Item term="Schedule">
        <code>{drill.schedule}</code> (UTC){drill.suspended && <Tag status="warning">suspended</Tag>}
      </Item>
      <Item term="Target">{drill.targetCluster}</Item>
      <Item term="Next drill">{drill.suspended ? 'none while suspended' : utc(drill.nextScheduleTime)}</Item>
      <Item term="Last drill started">{utc(drill.lastScheduleTime)}</Item>
      <Item term="Last drill">{drill.lastDrill || '—'}</Item>
      <Item term="Last result">{result(drill.lastResult)}</Item>
      <Item term="Last passed">{utc(drill.lastSuccessfulTime)}</Item>
      <Item term="In progress">{drill.active || '—'}</Item>
      {drill.message && <Item term="Message">{drill.message}</Item>}
    </DescriptionList>
  );
}

// Consistency shows what the group's replication points guarantee and what
// the last one reached: the frozen VMs' longest freeze, or why it is Crash.
export function Consistency({ c }: { c: ConsistencyView }) {
  const p = c.lastPoint;
  return (
    <DescriptionList isHorizontal columnModifier={{ lg: '2Col' }} aria-label="Consistency">
      <Item term="Mode asked">
        {c.mode}
        {c.freezeTimeoutSeconds ? ` (guests frozen ${c.freezeTimeoutSeconds} s at most)` : ''}
      </Item>
      <Item term="Last point">
        {p ? (
          <>
            <Tag status={p.consistency === 'Application' ? 'success' : 'warning'}>{p.consistency}</Tag> {utc(p.time)} by {p.source}
          </>
        ) : (
          'none recorded'
        )}
      </Item>
      {p?.frozenMilliseconds ? <Item term="Longest freeze">{p.frozenMilliseconds} ms</Item> : null}
      {p?.crashConsistentVMs?.length ? <Item term="Not frozen">{p.crashConsistentVMs.join(', ')}</Item> : null}
      {p?.message && <Item term="Why Crash">{p.message}</Item>}
    </DescriptionList>
  );
}
