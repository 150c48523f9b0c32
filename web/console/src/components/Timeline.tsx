import { ProgressStep, ProgressStepper } from '@patternfly/react-core';
import type { OperationView } from '../api';
import { seconds, when } from '../format';

// Timeline is an operation's phase history, each phase with how long it took;
// the last phase is current until the operation finishes. A long history is
// drawn top to bottom: side by side, its phase names would break mid-word.
export function Timeline({ op }: { op: OperationView }) {
  if (op.history.length === 0) return <span>Waiting for the controller to start it.</span>;
  return (
    <ProgressStepper aria-label={`Phases of ${op.name}`} isVertical={op.history.length > 5}>
      {op.history.map((s, i) => {
        const last = i === op.history.length - 1;
        const failed = last && op.finished && !op.succeeded;
        const variant = failed ? 'danger' : last && !op.finished ? 'info' : 'success';
        const id = `${op.name}-step-${i}`;
        return (
          <ProgressStep
            key={id}
            id={id}
            titleId={`${id}-title`}
            variant={variant}
            isCurrent={last && !op.finished}
            description={`${when(s.time)} · ${seconds(s.durationSeconds)}${s.message ? ' · ' + s.message : ''}`}
            aria-label={`${s.phase} ${variant}`}
          >
            {s.phase}
          </ProgressStep>
        );
      })}
    </ProgressStepper>
  );
}
