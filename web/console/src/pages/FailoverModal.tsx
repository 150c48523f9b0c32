import { useEffect, useState } from 'react';
import {
  Alert,
  Button,
  Form,
  FormGroup,
  FormSelect,
  FormSelectOption,
  List,
  ListItem,
  Modal,
  ModalBody,
  ModalFooter,
  ModalHeader,
  Spinner,
  TextInput,
} from '@patternfly/react-core';
import CheckCircleIcon from '@patternfly/react-icons/dist/esm/icons/check-circle-icon';
import ExclamationTriangleIcon from '@patternfly/react-icons/dist/esm/icons/exclamation-triangle-icon';
import OutlinedQuestionCircleIcon from '@patternfly/react-icons/dist/esm/icons/outlined-question-circle-icon';
import { get, GroupDetail, post, Preflight } from '../api';
import { Problem } from '../components/Problem';
import { seconds } from '../format';

export function targetsOf(d: GroupDetail): string[] {
  const all = d.zone?.clusters.map((c) => c.name) ?? d.group.clusters ?? [];
  return all.filter((c) => c !== d.group.activeCluster);
}

// FailoverModal runs a planned failover after its preflight, or an unplanned
// one after the user has seen the data-loss window and typed the group's name.
export function FailoverModal({
  detail,
  type,
  onClose,
}: {
  detail: GroupDetail;
  type: 'planned' | 'unplanned';
  onClose: () => void;
}) {
  const g = detail.group;
  const targets = targetsOf(detail);
  const [target, setTarget] = useState(targets[0] ?? '');
  const [pre, setPre] = useState<Preflight>();
  const [preError, setPreError] = useState<unknown>();
  const [confirm, setConfirm] = useState('');
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    setPre(undefined);
    get<Preflight>(
      `/api/namespaces/${encodeURIComponent(g.namespace)}/groups/${encodeURIComponent(g.name)}/preflight?target=${encodeURIComponent(target)}`,
    )
      .then(setPre)
      .catch(setPreError);
  }, [g.namespace, g.name, target]);

  const submit = async () => {
    setBusy(true);
    setError(undefined);
    try {
      await post(`/api/namespaces/${encodeURIComponent(g.namespace)}/failoverrequests`, {
        group: g.name,
        targetCluster: target,
        type,
        ...(type === 'unplanned' ? { confirm } : {}),
      });
      onClose();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };

  const title = type === 'planned' ? `Planned failover of ${g.name}` : `Unplanned failover of ${g.name}`;
  const ready = type === 'planned' ? !!pre : confirm === g.name;
  return (
    <Modal isOpen onClose={onClose} variant="medium" aria-labelledby="failover-title">
      <ModalHeader title={title} labelId="failover-title" titleIconVariant={type === 'unplanned' ? 'warning' : undefined} />
      <ModalBody>
        <Form
          onSubmit={(e) => {
            e.preventDefault();
            if (ready) void submit();
          }}
        >
          <FormGroup label="Target cluster" fieldId="failover-target" isRequired>
            <FormSelect id="failover-target" value={target} onChange={(_e, v) => setTarget(v)} aria-label="Target cluster">
              {targets.map((t) => (
                <FormSelectOption key={t} value={t} label={t} />
              ))}
            </FormSelect>
          </FormGroup>
          <Problem error={preError} title="Preflight" />
          {!pre && !preError && <Spinner size="md" aria-label="Running the preflight" />}
          {pre && type === 'planned' && (
            <div aria-label="Preflight checks">
              <List isPlain>
                {pre.checks.map((c) => (
                  <ListItem
                    key={c.name}
                    icon={
                      c.passed ? (
                        <CheckCircleIcon color="var(--pf-t--global--icon--color--status--success--default)" />
                      ) : c.unknown ? (
                        <OutlinedQuestionCircleIcon color="var(--pf-t--global--icon--color--status--info--default)" />
                      ) : (
                        <ExclamationTriangleIcon color="var(--pf-t--global--icon--color--status--warning--default)" />
                      )
                    }
                  >
                    <strong>{c.name}</strong>: {c.message}
                  </ListItem>
                ))}
              </List>
              {!pre.passed && (
                <Alert
                  isInline
                  variant={pre.checks.some((c) => !c.passed && !c.unknown) ? 'warning' : 'info'}
                  title={pre.checks.some((c) => !c.passed && !c.unknown) ? 'Not every check passed' : 'Not every check could be made'}
                >
                  The failover controller checks again and refuses what is unsafe.
                </Alert>
              )}
            </div>
          )}
          {pre && type === 'unplanned' && (
            <>
              <Alert isInline variant="danger" title="Data may be lost">
                An unplanned failover promotes {target} without waiting for the source.{' '}
                {pre.dataLossSeconds !== undefined
                  ? `Writes of up to the last ${seconds(pre.dataLossSeconds)} (the current replication lag) may be lost.`
                  : 'The current replication lag is unknown, so the window of lost writes is unknown.'}
              </Alert>
              <FormGroup label={`Type the group's name (${g.name}) to confirm`} fieldId="failover-confirm" isRequired>
                <TextInput id="failover-confirm" value={confirm} onChange={(_e, v) => setConfirm(v)} autoComplete="off" />
              </FormGroup>
            </>
          )}
          <Problem error={error} title="Failover" />
        </Form>
      </ModalBody>
      <ModalFooter>
        <Button
          variant={type === 'planned' ? 'primary' : 'danger'}
          onClick={() => void submit()}
          isDisabled={!ready || busy || !target}
          isLoading={busy}
        >
          {type === 'planned' ? 'Start planned failover' : 'Fail over now'}
        </Button>
        <Button variant="link" onClick={onClose}>
          Cancel
        </Button>
      </ModalFooter>
    </Modal>
  );
}
