import { useState } from 'react';
import { PageSection, Spinner, Title, ToggleGroup, ToggleGroupItem } from '@patternfly/react-core';
import { InnerScrollContainer, Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import type { ComplianceGroup, ComplianceReport, Overview } from '../api';
import { Problem } from '../components/Problem';
import { Tag } from '../components/Tag';
import { seconds, when } from '../format';
import { useLive } from '../live';
import { navigate, useQuery } from '../router';

// percent shows a share to three decimals of a percent, as `kubectl
// siterecovery report` does, so that 99.9 % and 100 % differ.
function percent(r?: number): string {
  return r === undefined || r === null ? '—' : `${(r * 100).toFixed(3)} %`;
}

function worst(g: ComplianceGroup): string {
  const w = g.rpo.worst;
  if (!w) return '—';
  return `${w.name}: peak ${seconds(w.peakLagSeconds)}, ${w.active ? 'active for' : 'for'} ${seconds(w.durationSeconds)}`;
}

// Report is a DR namespace's compliance report over a window: RPO met, the
// worst episode, the last drill and its checks, and the measured RTO of the
// last drill and failover (GET /api/namespaces/{ns}/report).
export function Report() {
  const query = useQuery();
  const overview = useLive<Overview>('/api/overview');
  const namespaces = (overview.data?.namespaces ?? []).map((n) => n.name);
  // The choice is the page's state; the URL keeps it across a reload (the
  // router re-renders on a new path only, not a new query).
  const [picked, setPicked] = useState({ ns: query.get('ns') || '', win: query.get('window') || '7d' });
  const ns = picked.ns || namespaces[0] || '';
  const win = picked.win;
  const go = (n: string, w: string) => {
    setPicked({ ns: n, win: w });
    navigate(`/report?ns=${encodeURIComponent(n)}&window=${encodeURIComponent(w)}`);
  };
  const { data, error, loading } = useLive<ComplianceReport>(
    ns ? `/api/namespaces/${encodeURIComponent(ns)}/report?window=${encodeURIComponent(win)}` : null,
  );
  if (overview.loading && !overview.data) return <Spinner aria-label="Loading the report" />;
  return (
    <>
      <PageSection>
        <Title headingLevel="h1">Compliance report</Title>
        {namespaces.length > 1 && (
          <ToggleGroup aria-label="DR namespace">
            {namespaces.map((n) => (
              <ToggleGroupItem key={n} text={n} buttonId={`ns-${n}`} isSelected={n === ns} onChange={() => go(n, win)} />
            ))}
          </ToggleGroup>
        )}
        <ToggleGroup aria-label="Window">
          {(data?.windows ?? ['24h', '7d', '30d']).map((w) => (
            <ToggleGroupItem key={w} text={w} buttonId={`window-${w}`} isSelected={w === win} onChange={() => go(ns, w)} />
          ))}
        </ToggleGroup>
        {data && (
          <p>
            DR namespace {data.namespace}, {when(data.from)} to {when(data.to)}
          </p>
        )}
      </PageSection>
      <PageSection>
        <Problem error={error ?? overview.error} title="Could not read the report" />
        {loading && !data && ns && <Spinner aria-label="Loading the report" />}
        {!ns && <p>No DR namespace that you may read.</p>}
        {data && (
          <InnerScrollContainer>
            <Table aria-label="Compliance" variant="compact">
              <Thead>
                <Tr>
                  <Th modifier="wrap">Group</Th>
                  <Th modifier="wrap">RPO met</Th>
                  <Th modifier="wrap">Breach</Th>
                  <Th modifier="wrap">Worst episode</Th>
                  <Th modifier="wrap">Last drill</Th>
                  <Th modifier="wrap">Drill RTO</Th>
                  <Th modifier="wrap">Last successful drill</Th>
                  <Th modifier="wrap">Last failover</Th>
                  <Th modifier="wrap">Failover RTO</Th>
                </Tr>
              </Thead>
              <Tbody>
                {data.groups.map((g) => (
                  <Tr key={g.name}>
                    <Td dataLabel="Group">{g.name}</Td>
                    <Td dataLabel="RPO met">{percent(g.rpo.metRatio)}</Td>
                    <Td dataLabel="Breach">{seconds(g.rpo.breachSeconds)}</Td>
                    <Td dataLabel="Worst episode">{worst(g)}</Td>
                    <Td dataLabel="Last drill">
                      {g.lastDrill ? (
                        <>
                          {g.lastDrill.name} <Tag>{g.lastDrill.scheduled ? 'scheduled' : 'manual'}</Tag> {g.lastDrill.phase}
                        </>
                      ) : (
                        '—'
                      )}
                    </Td>
                    <Td dataLabel="Drill RTO">{seconds(g.lastDrill?.rtoSeconds)}</Td>
                    <Td dataLabel="Last successful drill">{when(g.lastSuccessfulDrillTime)}</Td>
                    <Td dataLabel="Last failover">{g.lastFailover ? `${g.lastFailover.name} ${g.lastFailover.outcome}` : '—'}</Td>
                    <Td dataLabel="Failover RTO">{seconds(g.lastFailover?.rtoSeconds)}</Td>
                  </Tr>
                ))}
                {data.groups.length === 0 && (
                  <Tr>
                    <Td colSpan={9}>No protection groups.</Td>
                  </Tr>
                )}
              </Tbody>
            </Table>
          </InnerScrollContainer>
        )}
        {data?.groups.map(
          (g) =>
            g.lastDrill &&
            g.lastDrill.checks.length > 0 && (
              <ul key={g.name} aria-label={`Checks of ${g.lastDrill.name}`}>
                {g.lastDrill.checks.map((c) => (
                  <li key={c.vm + c.check}>
                    {c.passed ? '✔' : '✘'} {c.vm}: {c.check} {c.message}
                  </li>
                ))}
              </ul>
            ),
        )}
        {data?.groups.map((g) =>
          [g.rpo.note, g.lastDrill?.note].filter(Boolean).map((n) => (
            <p key={g.name + n}>
              {g.name}: {n}
            </p>
          )),
        )}
        {data?.notes?.map((n) => <p key={n}>{n}</p>)}
      </PageSection>
    </>
  );
}
