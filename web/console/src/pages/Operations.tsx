import { useState } from 'react';
import { Button, PageSection, Spinner, Title } from '@patternfly/react-core';
import { ExpandableRowContent, InnerScrollContainer, Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import type { OperationView } from '../api';
import { PhaseLabel } from '../components/Badges';
import { Tag } from '../components/Tag';
import { Problem } from '../components/Problem';
import { Timeline } from '../components/Timeline';
import { BootTimeline } from '../components/BootTimeline';
import { groupPath, seconds, when } from '../format';
import { useLive } from '../live';
import { navigate } from '../router';

// Operations lists every FailoverRequest, TestFailover and ProtectionRequest
// the user may read, with phase history, safety checks and who asked.
export function Operations() {
  const { data, error, loading } = useLive<{ operations: OperationView[] }>('/api/operations');
  const [open, setOpen] = useState<Record<string, boolean>>({});
  if (loading && !data) return <Spinner aria-label="Loading operations" />;
  const ops = data?.operations ?? [];
  return (
    <>
      <PageSection>
        <Title headingLevel="h1">Operations</Title>
      </PageSection>
      <PageSection>
        <Problem error={error} title="Could not read the operations" />
        {/* Ten columns do not fit a narrow window: the table scrolls sideways
            rather than cutting off its last columns. */}
        <InnerScrollContainer>
          <Table aria-label="Operations" variant="compact">
            <Thead>
              <Tr>
                <Th screenReaderText="Details" />
                <Th modifier="wrap">Request</Th>
                <Th modifier="wrap">Kind</Th>
                <Th modifier="wrap">Group</Th>
                <Th modifier="wrap">Target</Th>
                <Th modifier="wrap">Phase</Th>
                <Th modifier="wrap">Safety checks</Th>
                <Th modifier="wrap">Created</Th>
                <Th modifier="wrap">By</Th>
                <Th modifier="wrap">Duration</Th>
              </Tr>
            </Thead>
            {ops.map((o, i) => {
              const key = `${o.kind}/${o.namespace}/${o.name}`;
              const expanded = !!open[key];
              return (
                <Tbody key={key} isExpanded={expanded}>
                  <Tr>
                    <Td
                      expand={{ rowIndex: i, isExpanded: expanded, onToggle: () => setOpen({ ...open, [key]: !expanded }) }}
                    />
                    <Td dataLabel="Request">{o.name}</Td>
                    <Td dataLabel="Kind">
                      {o.kind} {o.type && <Tag>{o.type}</Tag>}
                    </Td>
                    <Td dataLabel="Group">
                      <Button variant="link" isInline onClick={() => navigate(groupPath(o.namespace, o.group))}>
                        {o.namespace}/{o.group}
                      </Button>
                    </Td>
                    <Td dataLabel="Target">{o.target || '—'}</Td>
                    <Td dataLabel="Phase">
                      <PhaseLabel phase={o.phase} finished={o.finished} succeeded={o.succeeded} />
                    </Td>
                    <Td dataLabel="Safety checks">
                      {o.kind === 'FailoverRequest' ? `lock: ${o.lock ?? 'not yet'}; taints: ${o.taints ?? 'not yet'}` : '—'}
                    </Td>
                    <Td dataLabel="Created">{when(o.created)}</Td>
                    <Td dataLabel="By">{o.createdBy || 'unknown'}</Td>
                    <Td dataLabel="Duration">{seconds(o.durationSeconds)}</Td>
                  </Tr>
                  <Tr isExpanded={expanded}>
                    <Td colSpan={10}>
                      <ExpandableRowContent>
                        <Timeline op={o} />
                        {o.message && <p>{o.message}</p>}
                        <BootTimeline op={o} />
                        {o.checks && o.checks.length > 0 && (
                          <ul aria-label="Check results">
                            {o.checks.map((c) => (
                              <li key={c.vm + c.check}>
                                {c.passed ? '✔' : '✘'} {c.vm}: {c.check} {c.message}
                              </li>
                            ))}
                          </ul>
                        )}
                        {o.conditions && o.conditions.length > 0 && (
                          <ul aria-label="Conditions">
                            {o.conditions.map((c) => (
                              <li key={c.type}>
                                {c.type}={c.status} {c.reason} {c.message}
                              </li>
                            ))}
                          </ul>
                        )}
                      </ExpandableRowContent>
                    </Td>
                  </Tr>
                </Tbody>
              );
            })}
            {ops.length === 0 && (
              <Tbody>
                <Tr>
                  <Td colSpan={10}>No operations yet.</Td>
                </Tr>
              </Tbody>
            )}
          </Table>
        </InnerScrollContainer>
      </PageSection>
    </>
  );
}
