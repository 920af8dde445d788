package dev.gatebench.gateway.zuul;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.cloud.netflix.zuul.EnableZuulProxy;

/**
 * Zuul 1 as gatebench runs it: Spring Cloud Netflix's {@code @EnableZuulProxy} with no routes
 * of its own.
 *
 * <p>Routes, port and proxy settings come from the application.yml that gatebench's zuul
 * renderer writes for one API description ({@code --spring.config.location=file:...}).
 * The few classes beside this one are generic: they make stock Zuul forward requests unchanged
 * and route by method as well as path (see docs/jvm-gateways.md).
 */
@SpringBootApplication
@EnableZuulProxy
@EnableConfigurationProperties(OperationsProperties.class)
public class GatebenchZuul {

    public static void main(String[] args) {
        // An escaped backslash (%5C) in a path would otherwise be refused with 400 by Tomcat
        // before Zuul sees it; routing reads the raw path, so the decoded form never matters.
        // Must be set before Tomcat's CoyoteAdapter class is loaded.
        System.setProperty("org.apache.catalina.connector.CoyoteAdapter.ALLOW_BACKSLASH", "true");
        SpringApplication.run(GatebenchZuul.class, args);
    }
}
