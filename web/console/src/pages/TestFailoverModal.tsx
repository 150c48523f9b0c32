import { useState } from 'react';
import {
  Button,
  Content,
  Form,
  FormGroup,
  FormSelect,
  FormSelectOption,
  Modal,
  ModalBody,
  ModalFooter,
  ModalHeader,
} from '@patternfly/react-core';
import { GroupDetail, post } from '../api';
import { Problem } from '../components/Problem';
import { targetsOf } from './FailoverModal';

// TestFailoverModal starts a test failover: the group's VMs boot from
// snapshots in an isolated namespace of the target while production runs on.
export function TestFailoverModal({ detail, onClose }: { detail: GroupDetail; onClose: () => void }) {
  const g = detail.group;
  const targets = targetsOf(detail);
  const [target, setTarget] = useState(targets[0] ?? '');
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const submit = async () => {
    setBusy(true);
    setError(undefined);
    try {
      await post(`/api/namespaces/${encodeURIComponent(g.namespace)}/testfailovers`, { group: g.name, targetCluster: target });
      onClose();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Modal isOpen onClose={onClose} variant="small" aria-labelledby="test-title">
      <ModalHeader title={`Test failover of ${g.name}`} labelId="test-title" />
      <ModalBody>
        <Content component="p">
          The VMs boot from snapshots in an isolated namespace of the target cluster and are checked; production keeps
          running on {g.activeCluster}. Everything is cleaned up afterwards.
        </Content>
        <Form
          onSubmit={(e) => {
            e.preventDefault();
            void submit();
          }}
        >
          <FormGroup label="Target cluster" fieldId="test-target" isRequired>
            <FormSelect id="test-target" value={target} onChange={(_e, v) => setTarget(v)} aria-label="Target cluster">
              {targets.map((t) => (
                <FormSelectOption key={t} value={t} label={t} />
              ))}
            </FormSelect>
          </FormGroup>
          <Problem error={error} title="Test failover" />
        </Form>
      </ModalBody>
      <ModalFooter>
        <Button variant="primary" onClick={() => void submit()} isDisabled={busy || !target} isLoading={busy}>
          Start test failover
        </Button>
        <Button variant="link" onClick={onClose}>
          Cancel
        </Button>
      </ModalFooter>
    </Modal>
  );
}
