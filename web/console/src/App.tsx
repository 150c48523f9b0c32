import { lazy, Suspense, useEffect, useState } from 'react';
import {
  Button,
  Masthead,
  MastheadBrand,
  MastheadContent,
  MastheadLogo,
  MastheadMain,
  Nav,
  NavItem,
  NavList,
  Page,
  PageSidebar,
  PageSidebarBody,
  SkipToContent,
  Spinner,
  ToggleGroup,
  ToggleGroupItem,
  Toolbar,
  ToolbarContent,
  ToolbarGroup,
  ToolbarItem,
} from '@patternfly/react-core';
import { dropPrefetched, get, post, SessionInfo, setCsrf, takePrefetched } from './api';
import { Login } from './pages/Login';
import { Overview } from './pages/Overview';
import { navigate, usePath } from './router';

type Theme = 'light' | 'dark';

function initialTheme(): Theme {
  const saved = localStorage.getItem('sr-theme');
  if (saved === 'light' || saved === 'dark') return saved;
  return window.matchMedia?.('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

export function App() {
  const [session, setSession] = useState<SessionInfo | null | undefined>(undefined);
  const [theme, setTheme] = useState<Theme>(initialTheme);
  const path = usePath();

  useEffect(() => {
    document.documentElement.classList.toggle('pf-v6-theme-dark', theme === 'dark');
    localStorage.setItem('sr-theme', theme);
  }, [theme]);

  useEffect(() => {
    (takePrefetched<SessionInfo>('/api/session') ?? get<SessionInfo>('/api/session'))
      .then((s) => {
        setCsrf(s.csrfToken);
        setSession(s);
      })
      .catch(() => {
        dropPrefetched(); // read without a session: refused, and stale after sign-in
        setSession(null);
      });
    const out = () => setSession(null);
    window.addEventListener('console:signed-out', out);
    return () => window.removeEventListener('console:signed-out', out);
  }, []);

  if (session === undefined) return <Spinner aria-label="Loading" />;
  if (session === null) {
    return (
      <main>
        <Login
          onSignedIn={(s) => {
            setCsrf(s.csrfToken);
            setSession(s);
          }}
        />
      </main>
    );
  }

  const signOut = async () => {
    try {
      await post('/api/logout');
    } finally {
      setCsrf('');
      setSession(null);
    }
  };

  const themeToggle = (
    <ToggleGroup aria-label="Theme" isCompact>
      <ToggleGroupItem text="Light" buttonId="theme-light" isSelected={theme === 'light'} onChange={() => setTheme('light')} />
      <ToggleGroupItem text="Dark" buttonId="theme-dark" isSelected={theme === 'dark'} onChange={() => setTheme('dark')} />
    </ToggleGroup>
  );

  const masthead = (
    <Masthead>
      <MastheadMain>
        <MastheadBrand>
          <MastheadLogo component="a" href="/" onClick={(e: React.MouseEvent) => { e.preventDefault(); navigate('/'); }}>
            Site Recovery
          </MastheadLogo>
        </MastheadBrand>
      </MastheadMain>
      <MastheadContent>
        <Toolbar isFullHeight>
          <ToolbarContent>
            <ToolbarGroup align={{ default: 'alignEnd' }}>
              <ToolbarItem>{themeToggle}</ToolbarItem>
              <ToolbarItem>
                <span aria-label="Signed in as">{session.user}</span>
              </ToolbarItem>
              <ToolbarItem>
                <Button variant="secondary" onClick={() => void signOut()}>
                  Sign out
                </Button>
              </ToolbarItem>
            </ToolbarGroup>
          </ToolbarContent>
        </Toolbar>
      </MastheadContent>
    </Masthead>
  );

  const items: [string, string][] = [
    ['/', 'Overview'],
    ['/operations', 'Operations'],
    ['/report', 'Report'],
    ['/protect', 'Protect a VM'],
  ];
  const sidebar = (
    <PageSidebar>
      <PageSidebarBody>
        <Nav aria-label="Console">
          <NavList>
            {items.map(([to, label]) => (
              <NavItem
                key={to}
                to={to}
                isActive={to === '/' ? path === '/' || path.startsWith('/groups/') : path.startsWith(to)}
                onClick={(e) => {
                  e.preventDefault();
                  navigate(to);
                }}
              >
                {label}
              </NavItem>
            ))}
          </NavList>
        </Nav>
      </PageSidebarBody>
    </PageSidebar>
  );

  return (
    <Page
      masthead={masthead}
      sidebar={sidebar}
      isManagedSidebar
      skipToContent={<SkipToContent href="#main">Skip to content</SkipToContent>}
      mainContainerId="main"
    >
      <Screen path={path} />
    </Page>
  );
}

// The screens other than the overview load when first opened: the first
// page a user sees then parses less script.
const Group = lazy(() => import('./pages/Group').then((m) => ({ default: m.Group })));
const Operations = lazy(() => import('./pages/Operations').then((m) => ({ default: m.Operations })));
const Protect = lazy(() => import('./pages/Protect').then((m) => ({ default: m.Protect })));
const Report = lazy(() => import('./pages/Report').then((m) => ({ default: m.Report })));

function Screen({ path }: { path: string }) {
  return (
    <Suspense fallback={<Spinner aria-label="Loading the page" />}>
      <ScreenOf path={path} />
    </Suspense>
  );
}

function ScreenOf({ path }: { path: string }) {
  const m = path.match(/^\/groups\/([^/]+)\/([^/]+)$/);
  if (m) return <Group key={path} ns={decodeURIComponent(m[1])} name={decodeURIComponent(m[2])} />;
  if (path.startsWith('/operations')) return <Operations />;
  if (path.startsWith('/protect')) return <Protect />;
  if (path.startsWith('/report')) return <Report />;
  return <Overview />;
}
