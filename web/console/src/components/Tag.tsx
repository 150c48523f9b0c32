import { memo, type ReactNode } from 'react';
import '@patternfly/react-styles/css/components/Label/label.css';
import CheckCircleIcon from '@patternfly/react-icons/dist/esm/icons/check-circle-icon';
import ExclamationCircleIcon from '@patternfly/react-icons/dist/esm/icons/exclamation-circle-icon';
import ExclamationTriangleIcon from '@patternfly/react-icons/dist/esm/icons/exclamation-triangle-icon';
import InfoCircleIcon from '@patternfly/react-icons/dist/esm/icons/info-circle-icon';

export type TagStatus = 'success' | 'warning' | 'danger' | 'info';
export type TagColor = 'blue' | 'purple' | 'grey';

const icons: Record<TagStatus, ReactNode> = {
  success: <CheckCircleIcon />,
  warning: <ExclamationTriangleIcon />,
  danger: <ExclamationCircleIcon />,
  info: <InfoCircleIcon />,
};

// Tag draws PatternFly's label markup without the Label component. The
// overview shows several per group row, and each Label adds document
// listeners, a ref and a measurement for its truncation tooltip: with
// hundreds of rows that was most of the drawing time. A status tag carries
// its icon as well as its colour, so it reads without colour too.
export const Tag = memo(function Tag({
  status,
  color,
  children,
}: {
  status?: TagStatus;
  color?: TagColor;
  children: ReactNode;
}) {
  const mod = status ? ` pf-m-${status}` : color && color !== 'grey' ? ` pf-m-${color}` : '';
  return (
    <span className={`pf-v6-c-label pf-m-filled${mod}`}>
      <span className="pf-v6-c-label__content">
        {status && (
          <span className="pf-v6-c-label__icon" aria-hidden="true">
            {icons[status]}
          </span>
        )}
        <span className="pf-v6-c-label__text">{children}</span>
      </span>
    </span>
  );
});
