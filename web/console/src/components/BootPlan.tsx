import { InnerScrollContainer, Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import type { BootPlan as Plan } from '../api';
import { seconds } from '../format';
import { Tag } from './Tag';

// VMs lists VM names, each kept on one line: a name broken at its hyphen
// reads as two.
export function VMs({ names }: { names?: string[] }) {
  return (
    <>
      {names?.map((n, i) => (
        <span key={n}>
          {i > 0 && ', '}
          <span className="sr-nowrap">{n}</span>
        </span>
      ))}
    </>
  );
}

type Gate = Plan['stages'][number]['gate'];

// gateText says what a VM must pass before the next stage starts.
export function gateText(g: Gate): string {
  switch (g.type) {
    case 'TCP':
      return `TCP port ${g.port}`;
    case 'HTTP':
      return `HTTP GET :${g.port}${g.path ?? '/'}`;
    case 'GuestAgent':
      return 'guest agent connected';
  }
  return 'VM Ready';
}

// BootPlan is a group's boot plan: its stages in the order they start, each
// with its VMs, gate, timeout and the images of its steps (a step's command
// and env are not repeated here), and what a stage that does not succeed does.
export function BootPlan({ plan }: { plan: Plan }) {
  const stop = plan.onStageTimeout !== 'Continue';
  return (
    <>
      <p>
        The stages start in this order; each starts once every VM of the one before passed its gate. A stage that
        times out or whose step fails: <strong>{plan.onStageTimeout}</strong>,{' '}
        {stop ? 'the later stages are not started and their VMs stay stopped.' : 'the next stage starts anyway.'}
      </p>
      <InnerScrollContainer>
        <Table aria-label="Boot plan" variant="compact">
          <Thead>
            <Tr>
              <Th modifier="wrap">#</Th>
              <Th modifier="wrap">Stage</Th>
              <Th modifier="wrap">Virtual machines</Th>
              <Th modifier="wrap">Gate</Th>
              <Th modifier="wrap">Timeout</Th>
              <Th modifier="wrap">Pre-start step</Th>
              <Th modifier="wrap">Post-start step</Th>
            </Tr>
          </Thead>
          <Tbody>
            {plan.stages.map((s, i) => (
              <Tr key={s.name}>
                <Td dataLabel="#">{i + 1}</Td>
                <Td modifier="nowrap" dataLabel="Stage">
                  {s.name} {s.implicit && <Tag color="grey">implicit</Tag>}
                </Td>
                <Td dataLabel="Virtual machines">
                  {s.implicit ? (
                    'the VMs no stage names or selects'
                  ) : (
                    <>
                      <VMs names={s.virtualMachines} />
                      {s.virtualMachines?.length && s.selector ? '; ' : ''}
                      {s.selector && (
                        <>
                          labels <span className="sr-mono">{s.selector}</span>
                        </>
                      )}
                    </>
                  )}
                </Td>
                <Td modifier="nowrap" dataLabel="Gate">
                  {gateText(s.gate)}
                </Td>
                <Td modifier="nowrap" dataLabel="Timeout">
                  {seconds(s.timeoutSeconds)}
                </Td>
                <Td dataLabel="Pre-start step">
                  {s.preStart ? <span className="sr-mono">{s.preStart.image}</span> : '—'}
                </Td>
                <Td dataLabel="Post-start step">
                  {s.postStart ? <span className="sr-mono">{s.postStart.image}</span> : '—'}
                </Td>
              </Tr>
            ))}
          </Tbody>
        </Table>
      </InnerScrollContainer>
    </>
  );
}
